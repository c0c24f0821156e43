// A page reload and a closed tab never stall the agent, run by tests/e2e/test_bridge_reload.py.
// A turn writes a cell; the person saves and reloads the page; without a hover, the reloaded
// page's badges say what the kernel confirms; the next turn's write shows up in
// the reloaded page within a bound well under the kernel's 30 s reply timeout. Then the active
// cell (its toolbar shown) keeps its provenance badge and "Undo" clickable, and the tooltip of a
// cell whose metadata names a call this kernel never made does not claim nbagent wrote it.
import { env, inPanel as inNotebook, log, runCell as runNotebookCell, runInBrowser, shooter, TIMEOUT, waitInPanel } from './browser.mjs';

const BASE = env('NBAGENT_E2E_URL');
const TOKEN = env('NBAGENT_E2E_TOKEN');
const NOTEBOOK = env('NBAGENT_E2E_NOTEBOOK');
const ARTIFACTS = env('NBAGENT_E2E_ARTIFACTS');
const PLAN = JSON.parse(env('NBAGENT_E2E_PLAN'));
const shot = shooter(ARTIFACTS);

const inPanel = (page, fn, arg = null) => inNotebook(page, NOTEBOOK, fn, arg);
const waitFor = (page, what, fn, arg = null, timeout = TIMEOUT) => waitInPanel(page, NOTEBOOK, what, fn, arg, timeout);
const indexOf = (page, start) =>
  inPanel(page, (app, panel, s) => panel.content.model.sharedModel.cells.findIndex(c => c.getSource().startsWith(s)), start);
const cellWith = (page, start) =>
  waitFor(page, `a cell starting ${JSON.stringify(start)}`, (app, panel, s) =>
    panel.content.model.sharedModel.cells.some(c => c.getSource().startsWith(s)), start, PLAN.bound_ms);

async function ready(page) {
  await page.waitForFunction(() => window.jupyterapp && window.jupyterapp.started, null, { timeout: TIMEOUT });
  await waitFor(page, 'an idle kernel', (app, panel) => {
    const kernel = panel && panel.sessionContext.session && panel.sessionContext.session.kernel;
    return kernel && kernel.connectionStatus === 'connected' && kernel.status === 'idle' && panel.content.model;
  });
}

await runInBrowser(ARTIFACTS, 'reload', async (page, result) => {
  await page.goto(`${BASE}/lab/tree/${NOTEBOOK}?reset&token=${TOKEN}`, { timeout: TIMEOUT });
  await ready(page);
  await runNotebookCell(page, NOTEBOOK, 0);
  await waitFor(page, 'the session', (app, panel) =>
    (panel.content.model.cells.get(0).toJSON().outputs || []).some(o => String(o.text || '').includes('insert_cell')));
  await runNotebookCell(page, NOTEBOOK, await indexOf(page, PLAN.turn1));
  await waitFor(page, 'the first turn\'s cell', (app, panel, s) =>
    panel.content.model.sharedModel.cells.some(c => c.getSource() === s), PLAN.first);
  await inPanel(page, (app, panel) => panel.context.save());
  await shot(page, 'before-reload');

  // 1. F5, the pointer away from every cell: each badge says what the kernel confirms, unhovered.
  await page.mouse.move(0, 0);
  await page.reload({ timeout: TIMEOUT });
  log('reloaded');
  await ready(page);
  await waitFor(page, 'the kernel\'s word on every badge, unhovered', (app, panel) => {
    const claims = [...panel.node.querySelectorAll('.jp-Cell > .nbagent-badge')].map(b => b.dataset.nbagentClaim);
    return claims.length === 2 && !claims.includes('unasked');
  }, null, PLAN.bound_ms);
  result.loaded = await inPanel(page, (app, panel) => panel.content.widgets
    .map(c => ({ source: c.model.sharedModel.getSource(), badge: c.node.querySelector(':scope > .nbagent-badge') }))
    .filter(c => c.badge)
    .map(c => ({ source: c.source, claim: c.badge.dataset.nbagentClaim, title: c.badge.title })));
  log('badges after reload', result.loaded);
  await shot(page, 'badges-after-reload');

  // 2. The next turn's write lands in the reloaded page without waiting out a timeout.
  await runNotebookCell(page, NOTEBOOK, await indexOf(page, PLAN.turn2));
  const started = Date.now();
  await cellWith(page, PLAN.second);
  result.secondAfterMs = Date.now() - started;
  log('written after reload', { ms: result.secondAfterMs });
  await shot(page, 'written-after-reload');

  // 3. The written cell, active (its toolbar shown): the badge and its "Undo" stay clickable.
  const written = page.locator('.jp-Notebook .jp-Cell').nth(await indexOf(page, PLAN.second));
  await written.locator('.jp-InputArea-editor').click();
  await written.locator('.jp-cell-toolbar').first().waitFor({ state: 'visible', timeout: TIMEOUT });
  await written.hover();
  const undo = written.locator('button.nbagent-undo-cell');
  await undo.waitFor({ state: 'visible', timeout: TIMEOUT });
  result.confirmedTitle = await written.locator('.nbagent-badge').getAttribute('title');
  await shot(page, 'active-cell-badge');
  await undo.click({ timeout: 10000 });
  log('clicked', { label: 'badge Undo' });
  await waitFor(page, 'the written cell undone', (app, panel, s) =>
    !panel.content.model.sharedModel.cells.some(c => c.getSource().startsWith(s)), PLAN.second);

  // 4. A cell whose metadata names a call this kernel never made.
  const forged = page.locator('.jp-Notebook .jp-Cell').nth(await indexOf(page, PLAN.forged));
  result.forgedTitleBefore = await forged.getAttribute('title');
  await forged.hover();
  await waitFor(page, 'the kernel refusing the forged badge', (app, panel, s) => {
    const cell = panel.content.widgets.find(c => c.model.sharedModel.getSource().startsWith(s));
    return cell && cell.node.dataset.nbagentOffer === 'refused';
  }, PLAN.forged);
  result.forgedTitle = await forged.getAttribute('title');
  result.forgedUndo = await forged.locator('button.nbagent-undo-cell').count();
  await inPanel(page, (app, panel) => panel.context.save());
  await shot(page, 'forged-badge');
});
