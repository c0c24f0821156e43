// A walkthrough run the way a person runs it, by tests/e2e/test_walkthrough_run_all.py: open the
// notebook in JupyterLab (NBAGENT_E2E_UI=lab) or Notebook 7 (=notebook7), choose Run → Run All
// Cells from the menu bar, wait until every code cell has run and the kernel is idle, then report
// each cell's error outputs, the last cell's printed text, and what each approval panel says was
// decided and by whom.
import { env, inPanel as inNotebook, log, openNotebook, runInBrowser, shooter, waitInPanel } from './browser.mjs';

const BASE = env('NBAGENT_E2E_URL');
const TOKEN = env('NBAGENT_E2E_TOKEN');
const NOTEBOOK = env('NBAGENT_E2E_NOTEBOOK');
const UI = env('NBAGENT_E2E_UI');
const ARTIFACTS = env('NBAGENT_E2E_ARTIFACTS');
const RUN_TIMEOUT = Number(process.env.NBAGENT_E2E_RUN_TIMEOUT_MS || 180000);
const shot = shooter(ARTIFACTS);

const inPanel = (page, fn, arg = null) => inNotebook(page, NOTEBOOK, fn, arg);

await runInBrowser(ARTIFACTS, `run-all-${UI}`, async (page, result) => {
  await openNotebook(page, { base: BASE, token: TOKEN, nbPath: NOTEBOOK, ui: UI });
  const started = performance.now();
  // Both front ends have the same menu bar entry: Run → Run All Cells.
  await page.locator('.lm-MenuBar-itemLabel', { hasText: /^Run$/ }).click();
  await page.locator('.lm-Menu-itemLabel', { hasText: /^Run All Cells$/ }).click();
  log('chose Run → Run All Cells', { ui: UI });
  await waitInPanel(page, NOTEBOOK, 'every code cell run, the kernel idle', (app, panel) => {
    const cells = [...panel.content.model.cells].map(c => c.toJSON()).filter(c => c.cell_type === 'code');
    const kernel = panel.sessionContext.session.kernel;
    const last = cells[cells.length - 1];
    return kernel.status === 'idle' && cells.every(c => c.execution_count !== null) && (last.outputs || []).length > 0;
  }, null, RUN_TIMEOUT);
  result.seconds = Math.round((performance.now() - started) / 100) / 10;
  await shot(page, `run-all-${UI}-done`);
  Object.assign(result, await inPanel(page, (app, panel) => {
    const cells = [...panel.content.model.cells].map(c => c.toJSON());
    const code = cells.filter(c => c.cell_type === 'code');
    const text = c => (c.outputs || []).map(o => [].concat(o.text || '').join('')).join('');
    return {
      first: code[0].source,
      errors: code.flatMap((c, i) => (c.outputs || []).filter(o => o.output_type === 'error').map(o => `cell ${i}: ${o.ename}: ${o.evalue}`)),
      lastPrinted: text(code[code.length - 1]),
      // Each decided panel collapses to one line: ✔/⊘, the decision, and who made it.
      decided: [...panel.node.querySelectorAll('.widget-html-content')]
        .map(node => node.textContent.trim())
        .filter(line => line.startsWith('✔') || line.startsWith('⊘'))
    };
  }));
  log('ran', { seconds: result.seconds, decided: result.decided.length });
});
