// Two browser pages on one notebook with real-time collaboration, run by
// tests/e2e/test_collaboration.py. Page A runs a `%%agent` cell whose insert_cell asks for
// approval; page B's person starts typing key by key into the last cell; a few keys in, A's
// person clicks Approve, so the agent's cell goes in above B's cell while B types. Both pages
// then show the agent's cell once and every key B typed.
import { env, inPanel, log, runCell, runInBrowser, shooter, TIMEOUT, waitInPanel } from './browser.mjs';

const BASE = env('NBAGENT_E2E_URL');
const TOKEN = env('NBAGENT_E2E_TOKEN');
const NOTEBOOK = env('NBAGENT_E2E_NOTEBOOK');
const ARTIFACTS = env('NBAGENT_E2E_ARTIFACTS');
const PLAN = JSON.parse(env('NBAGENT_E2E_PLAN'));
const DELAY = Number(process.env.NBAGENT_E2E_KEY_DELAY_MS || 40);
const shot = shooter(ARTIFACTS);

const sources = page => inPanel(page, NOTEBOOK, (app, panel) => {
  const model = panel.content.model;
  const out = [];
  for (let i = 0; i < model.cells.length; i++) {
    out.push(model.cells.get(i).sharedModel.getSource());
  }
  return out;
});

async function open(page) {
  await page.goto(`${BASE}/lab/tree/${NOTEBOOK}?token=${TOKEN}`, { timeout: TIMEOUT });
  await page.waitForFunction(() => window.jupyterapp && window.jupyterapp.started, null, { timeout: TIMEOUT });
  await waitInPanel(page, NOTEBOOK, 'the notebook and an idle kernel', (app, panel) => {
    const kernel = panel && panel.sessionContext.session && panel.sessionContext.session.kernel;
    return kernel && kernel.connectionStatus === 'connected' && kernel.status === 'idle' && panel.content.model &&
      panel.content.model.cells.length > 0;
  });
}

await runInBrowser(ARTIFACTS, 'collaboration', async (a, result) => {
  const b = await (await a.context().browser().newContext({ viewport: { width: 1200, height: 900 } })).newPage(); // another person
  await open(a);
  await open(b);
  result.collaborative = await inPanel(a, NOTEBOOK, (app, panel) => panel.context.model.collaborative === true);
  const run = i => runCell(a, NOTEBOOK, i);
  await run(0);
  await waitInPanel(a, NOTEBOOK, 'the session', (app, panel) =>
    (panel.content.model.cells.get(0).toJSON().outputs || []).some(o => String(o.text || '').includes('insert_cell')));
  await run(PLAN.agent_index);
  const approve = a.locator('button.jupyter-button', { hasText: /^\s*Approve\s*$/ }).filter({ visible: true }).first();
  await approve.waitFor({ state: 'visible', timeout: TIMEOUT });
  log('panel shown in A');

  // B's person types into the last cell, key by key; A approves a few keys in.
  await b.locator('.jp-Notebook .jp-Cell').nth(PLAN.typing_index).locator('.cm-content').click();
  await b.keyboard.press('Control+End');
  let typingDone = false;
  const typing = b.keyboard.type(PLAN.typed, { delay: DELAY }).then(() => {
    typingDone = true;
  });
  await waitInPanel(b, NOTEBOOK, 'the first keys', (app, panel, a) =>
    panel.content.model.cells.get(a.i).sharedModel.getSource().length >= a.some,
  { i: PLAN.typing_index, some: PLAN.original.length + 8 });
  const clicked = Date.now();
  await approve.click();
  log('approved in A while B types');
  await waitInPanel(b, NOTEBOOK, "the agent's cell in B", (app, panel, inserted) => {
    const model = panel.content.model;
    for (let i = 0; i < model.cells.length; i++) {
      if (model.cells.get(i).sharedModel.getSource() === inserted) {
        return true;
      }
    }
    return false;
  }, PLAN.inserted);
  result.insertedWhileTyping = !typingDone; // the cell went in above B's while B was typing
  result.insertMs = Date.now() - clicked;
  log("the agent's cell is in B", { typingDone });
  await typing;
  log('B done typing');
  const want = PLAN.original + PLAN.typed;
  for (const [name, page] of [['A', a], ['B', b]]) {
    await waitInPanel(page, NOTEBOOK, `the agent's cell and B's typing in ${name}`, (app, panel, w) => {
      const model = panel.content.model;
      const all = [];
      for (let i = 0; i < model.cells.length; i++) {
        all.push(model.cells.get(i).sharedModel.getSource());
      }
      return all.includes(w.inserted) && all.includes(w.typed);
    }, { inserted: PLAN.inserted, typed: want });
  }
  await a.getByText(PLAN.done).first().waitFor({ state: 'visible', timeout: TIMEOUT });
  result.a = await sources(a);
  result.b = await sources(b);
  await shot(a, 'page-a');
  await shot(b, 'page-b');
});
