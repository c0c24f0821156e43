// Browser end-to-end test of nbagent in JupyterLab, run by tests/e2e/test_browser.py, which
// starts the server, writes the notebook and the replay scripts, and passes everything in the
// environment. Steps print one JSON line each; any failure exits non-zero with a screenshot.
//
// Scenario: run `%load_ext nbagent` and a `%%agent` cell (replay model) that calls an MCP tool
// needing approval and then insert_cell; click Approve on the real panels; the new cell appears
// with its source, provenance metadata and marker, and the saved file has it. Then a second turn
// whose insert_cell is denied: nothing is written.
import fs from 'node:fs';
import { env, inPanel as inNotebook, log, runCell as runNotebookCell, runInBrowser, shooter, TIMEOUT, waitInPanel } from './browser.mjs';

const BASE = env('NBAGENT_E2E_URL');
const TOKEN = env('NBAGENT_E2E_TOKEN');
const NOTEBOOK = env('NBAGENT_E2E_NOTEBOOK'); // path relative to the server root
const NOTEBOOK_FILE = env('NBAGENT_E2E_NOTEBOOK_FILE'); // the same file on disk
const ARTIFACTS = env('NBAGENT_E2E_ARTIFACTS');
const EXPECT_SOURCE = env('NBAGENT_E2E_EXPECT_SOURCE');
const DENIED_SOURCE = env('NBAGENT_E2E_DENIED_SOURCE');
const MCP_TOOL = env('NBAGENT_E2E_MCP_TOOL');
const TURN1_TEXT = env('NBAGENT_E2E_TURN1_TEXT');
const TURN2_TEXT = env('NBAGENT_E2E_TURN2_TEXT');

const screenshot = shooter(ARTIFACTS);

const inPanel = (page, fn, arg = null) => inNotebook(page, NOTEBOOK, fn, arg);
const waitFor = (page, what, fn, arg = null, timeout = TIMEOUT) => waitInPanel(page, NOTEBOOK, what, fn, arg, timeout);

const cellsOf = (app, panel) => {
  const out = [];
  const model = panel.content.model;
  for (let i = 0; i < model.cells.length; i++) {
    const c = model.cells.get(i);
    out.push({ id: c.id, type: c.type, source: c.sharedModel.getSource(), nbagent: c.getMetadata('nbagent') ?? null });
  }
  return out;
};

const runCell = (page, index) => runNotebookCell(page, NOTEBOOK, index);

/** Click the visible decision button of the pending approval panel for `tool`. */
async function decide(page, tool, label) {
  // ipywidgets buttons: match the exact label ("Approve", not "Approve for session").
  const buttons = page.locator('button.jupyter-button', { hasText: new RegExp(`^\\s*${label}\\s*$`) });
  const deadline = Date.now() + TIMEOUT;
  while (Date.now() < deadline) {
    for (const button of await buttons.all()) {
      if (!(await button.isVisible())) {
        continue; // a decided panel keeps its (hidden) buttons
      }
      const panelText = await button.evaluate(b => (b.closest('.widget-vbox') || b).textContent || '');
      if (panelText.includes('Approval needed') && panelText.includes(`model calls it ${tool}`)) {
        await screenshot(page, `panel-${tool}`);
        await button.click();
        log('clicked', { tool, label });
        return;
      }
    }
    await page.waitForTimeout(200);
  }
  const seen = await page.evaluate(() =>
    [...document.querySelectorAll('button.jupyter-button')].map(b => ({
      text: b.textContent,
      visible: b.offsetParent !== null,
      panel: ((b.closest('.widget-vbox') || b).textContent || '').slice(0, 120)
    }))
  );
  throw new Error(`no visible approval panel for ${tool} with a ${label} button; buttons: ${JSON.stringify(seen)}`);
}

function savedCells() {
  const nb = JSON.parse(fs.readFileSync(NOTEBOOK_FILE, 'utf8'));
  return nb.cells.map(c => ({
    id: c.id,
    source: Array.isArray(c.source) ? c.source.join('') : c.source,
    nbagent: (c.metadata || {}).nbagent ?? null,
    metadata: c.metadata || {},
    nbMetadata: nb.metadata
  }));
}

await runInBrowser(ARTIFACTS, 'e2e', async (page, result) => {
  result.consoleErrors = [];
  page.on('console', msg => {
    if (msg.type() === 'error' && result.consoleErrors.length < 20) {
      result.consoleErrors.push(msg.text());
    }
  });
  await page.goto(`${BASE}/lab/tree/${NOTEBOOK}?reset&token=${TOKEN}`, { timeout: TIMEOUT });
  await page.waitForFunction(() => window.jupyterapp && window.jupyterapp.started, null, { timeout: TIMEOUT });
  log('lab loaded');
  const active = await page.evaluate(() => window.jupyterapp.isPluginActivated('nbagent:bridge'));
  if (!active) {
    throw new Error('the nbagent:bridge plugin is not active: the extension did not load');
  }
  await waitFor(page, 'the notebook and an idle kernel', (app, panel) => {
    const kernel = panel && panel.sessionContext.session && panel.sessionContext.session.kernel;
    return kernel && kernel.connectionStatus === 'connected' && kernel.status === 'idle' && panel.content.model;
  });
  const before = await inPanel(page, cellsOf);
  log('notebook open', { cells: before.length });
  await screenshot(page, 'opened');

  // %load_ext nbagent, then the (idempotent) native-tools check, then turn 1.
  await runCell(page, 0);
  await runCell(page, 1);
  await waitFor(page, 'the native tools in the session', (app, panel) => {
    const outputs = panel.content.model.cells.get(1).toJSON().outputs || [];
    return outputs.some(o => String(o.text || '').includes('insert_cell'));
  });
  log('session ready');
  await runCell(page, 2);
  // As after Shift+Enter, the user is on the next cell when the panel asks.
  await inPanel(page, (app, panel) => {
    panel.content.activeCellIndex = 3;
    return true;
  });
  await decide(page, MCP_TOOL, 'Approve');
  // The click hands the keyboard back to the notebook, in command mode, on the cell the user
  // was on: Shift+Enter goes on from there instead of pressing the button again.
  const focus = await waitFor(page, 'the keyboard back in the notebook', (app, panel) => {
    const a = document.activeElement;
    const back = a && panel.content.node.contains(a) && !a.closest('button') && panel.content.mode === 'command';
    return back ? { active: panel.content.activeCellIndex } : null;
  });
  if (focus.active !== 3) {
    throw new Error(`after the click the active cell is ${focus.active}, not the one the user was on (3)`);
  }
  log('focus back in the notebook', focus);
  await decide(page, 'insert_cell', 'Approve');

  const inserted = await waitFor(
    page,
    'the inserted cell',
    (app, panel, source) => {
      const model = panel.content.model;
      for (let i = 0; i < model.cells.length; i++) {
        const c = model.cells.get(i);
        if (c.sharedModel.getSource() === source) {
          const widget = panel.content.widgets[i];
          return {
            index: i,
            id: c.id,
            type: c.type,
            nbagent: c.getMetadata('nbagent') ?? null,
            marked: widget.node.classList.contains('nbagent-agent-cell'),
            title: widget.node.title
          };
        }
      }
      return null;
    },
    EXPECT_SOURCE
  );
  log('inserted', inserted);
  const p = inserted.nbagent || {};
  if (!(p.thread_id && p.turn_id && p.call_id) || inserted.type !== 'code') {
    throw new Error(`inserted cell lacks provenance: ${JSON.stringify(inserted)}`);
  }
  // The marker class is applied on the next animation frame.
  await waitFor(page, 'the agent-cell marker', (app, panel, i) => panel.content.widgets[i].node.classList.contains('nbagent-agent-cell'), inserted.index);
  await page.locator('.nbagent-agent-cell').first().scrollIntoViewIfNeeded();
  await screenshot(page, 'inserted');

  // Right below the agent cell (index 2), not at the end of the notebook.
  if (inserted.index !== 3) {
    throw new Error(`the inserted cell is at index ${inserted.index}, not right below the agent cell (3)`);
  }
  // Not saved under the user's hands (autosave is off by default): the notebook is only dirty,
  // and the user's own save then goes through without a "File Changed" dialog.
  if (!(await inPanel(page, (app, panel) => panel.context.model.dirty))) {
    throw new Error('the notebook is not marked dirty after the agent wrote a cell');
  }
  await page.evaluate(() => window.jupyterapp.commands.execute('docmanager:save'));
  if (await page.locator('.jp-Dialog').count()) {
    throw new Error(`a dialog opened on save: ${await page.locator('.jp-Dialog').first().textContent()}`);
  }
  const deadline = Date.now() + TIMEOUT;
  let saved = null;
  while (Date.now() < deadline) {
    saved = savedCells().find(c => c.source === EXPECT_SOURCE);
    if (saved) {
      break;
    }
    await page.waitForTimeout(200);
  }
  if (!saved) {
    throw new Error('the saved notebook does not contain the inserted cell');
  }
  const same = ['thread_id', 'turn_id', 'call_id'].every(k => saved.nbagent && saved.nbagent[k] === p[k]);
  if (!same) {
    throw new Error(`saved provenance ${JSON.stringify(saved.nbagent)} != ${JSON.stringify(p)}`);
  }
  const threads = (saved.nbMetadata.nbagent || {}).threads || [];
  if (!threads.includes(p.thread_id)) {
    throw new Error(`notebook metadata threads ${JSON.stringify(threads)} lack ${p.thread_id}`);
  }
  log('saved', { provenance: saved.nbagent, threads });
  result.provenance = p;
  result.threads = threads;

  // Turn 1 ends with the script's final message; only then start turn 2.
  await page.getByText(TURN1_TEXT).first().waitFor({ state: 'visible', timeout: TIMEOUT });
  const countAfterTurn1 = (await inPanel(page, cellsOf)).length;

  // Turn 2 (its cell moved down by the inserted one): insert_cell denied, nothing written.
  await runCell(page, 4);
  await decide(page, 'insert_cell', 'Deny');
  await page.getByText(TURN2_TEXT).first().waitFor({ state: 'visible', timeout: TIMEOUT });
  await screenshot(page, 'denied');
  await page.evaluate(() => window.jupyterapp.commands.execute('docmanager:save'));
  await waitFor(page, 'the save to finish', (app, panel) => panel.context.model && !panel.context.model.dirty);
  const after = await inPanel(page, cellsOf);
  if (after.length !== countAfterTurn1 || after.some(c => c.source.includes(DENIED_SOURCE))) {
    throw new Error(`a denied write reached the notebook: ${JSON.stringify(after)}`);
  }
  if (savedCells().some(c => c.source.includes(DENIED_SOURCE))) {
    throw new Error('a denied write reached the saved file');
  }
  log('denied: nothing written', { cells: after.length });
  result.cells = after.length;

  // Reopening the notebook offers to resume its recorded thread; accepting runs %agent resume.
  await page.goto(`${BASE}/lab/tree/${NOTEBOOK}?reset&token=${TOKEN}`, { timeout: TIMEOUT });
  await page.waitForFunction(() => window.jupyterapp && window.jupyterapp.started, null, { timeout: TIMEOUT });
  const offer = page.getByText('nbagent thread(s). Resume one in the kernel?');
  await offer.first().waitFor({ state: 'visible', timeout: TIMEOUT });
  await screenshot(page, 'resume-offer');
  await page.getByRole('button', { name: /^Resume thread_/ }).first().click();
  const resumed = await waitFor(
    page,
    'the resume cell to run',
    (app, panel, threadId) => {
      const model = panel && panel.content.model;
      if (!model) {
        return null;
      }
      for (let i = 0; i < model.cells.length; i++) {
        const json = model.cells.get(i).toJSON();
        const source = Array.isArray(json.source) ? json.source.join('') : json.source;
        const text = (json.outputs || []).map(o => String(o.text || '')).join('');
        if (source.includes(`%agent resume ${threadId}`) && text.includes(threadId)) {
          return { index: i, output: text };
        }
      }
      return null;
    },
    p.thread_id
  );
  log('resumed', resumed);
  await inPanel(page, (app, panel, i) => panel.content.scrollToCell(panel.content.widgets[i]).then(() => true), resumed.index);
  await screenshot(page, 'resumed');
}, { viewport: { width: 1400, height: 1000 } });
