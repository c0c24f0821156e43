// Cell changes in JupyterLab (NBAGENT_E2E_UI=lab) and Notebook 7 (=notebook7), run by
// tests/e2e/test_cell_changes.py: the model reads the notebook and proposes replace_cell on the
// target cell; the approval panel shows the diff; Deny leaves the cell as it was; a second
// proposal, approved, changes it. With PLAN.full, a third is proposed, and before the click the
// person types into the target cell key by key: approving it writes nothing, the person's typing
// stays and the card shows the conflict; then move_cell and delete_cell, each shown (positions;
// "its output goes too") and approved. Then a file made with apply_patch. With PLAN.full, "Undo
// turn" is refused while the person's typing is in a cell the turn wrote; once it is out, the
// target cell's badge "Undo" puts back that cell alone. "Undo turn" then puts back the rest: the
// cells and the file are as before the turn. Each cell is read with its metadata and whether the
// page shows its badge.
import { env, inPanel as inNotebook, log, openNotebook, runCell as runNotebookCell, runInBrowser, shooter, TIMEOUT, waitInPanel } from './browser.mjs';

const BASE = env('NBAGENT_E2E_URL');
const TOKEN = env('NBAGENT_E2E_TOKEN');
const NOTEBOOK = env('NBAGENT_E2E_NOTEBOOK');
const ARTIFACTS = env('NBAGENT_E2E_ARTIFACTS');
const PLAN = JSON.parse(env('NBAGENT_E2E_PLAN'));
const UI = env('NBAGENT_E2E_UI');
const DELAY = Number(process.env.NBAGENT_E2E_KEY_DELAY_MS || 40);
const shot = shooter(ARTIFACTS);

const inPanel = (page, fn, arg = null) => inNotebook(page, NOTEBOOK, fn, arg);
const waitFor = (page, what, fn, arg = null) => waitInPanel(page, NOTEBOOK, what, fn, arg, TIMEOUT);
const sourceOf = (page, index) => inPanel(page, (app, panel, i) => panel.content.model.cells.get(i).sharedModel.getSource(), index);

const runCell = (page, index) => runNotebookCell(page, NOTEBOOK, index);
/** Every cell as the model holds it, once each cell's badge on the page agrees with its metadata. */
const cellsOf = page => waitFor(page, 'the badges as the metadata says', (app, panel) => {
  const out = panel.content.widgets.map(widget => {
    const cell = widget.model;
    const json = cell.toJSON();
    return { id: cell.id, type: cell.type, source: cell.sharedModel.getSource(), outputs: json.outputs || [],
             execution_count: json.execution_count ?? null, metadata: json.metadata || {}, trusted: cell.trusted,
             badge: !!widget.node.querySelector(':scope > .nbagent-badge') };
  });
  return out.every(c => c.badge === (typeof c.metadata.nbagent?.call_id === 'string')) ? out : null;
});

/** The visible, undecided approval panel for `tool` that shows `needle`. */
async function panelFor(page, tool, needle) {
  const deadline = Date.now() + TIMEOUT;
  while (Date.now() < deadline) {
    for (const button of await page.locator('button.jupyter-button', { hasText: /^\s*Deny\s*$/ }).all()) {
      if (!(await button.isVisible())) {
        continue;
      }
      const panel = button.locator('xpath=ancestor::div[contains(@class, "widget-vbox")][1]');
      const text = (await panel.textContent()) || '';
      if (text.includes(`model calls it ${tool}`) && text.includes(needle)) {
        return { panel, text };
      }
    }
    await page.waitForTimeout(200);
  }
  throw new Error(`no approval panel for ${tool} showing ${JSON.stringify(needle)}`);
}

async function click(panel, label) {
  await panel.locator('button.jupyter-button', { hasText: new RegExp(`^\\s*${label}\\s*$`) }).first().click();
  log('clicked', { label });
}

await runInBrowser(ARTIFACTS, 'cell-changes', async (page, result) => {
  await openNotebook(page, { base: BASE, token: TOKEN, nbPath: NOTEBOOK, ui: UI });
  result.app = await page.evaluate(() => window.jupyterapp.name);
  await runCell(page, 0);
  await waitFor(page, 'the session', (app, panel) =>
    (panel.content.model.cells.get(0).toJSON().outputs || []).some(o => String(o.text || '').includes('move_cell'))
  );
  const target = PLAN.target_index;
  await runCell(page, PLAN.agent_index);

  // 1. The diff is shown; Deny leaves the cell as it was.
  const denied = await panelFor(page, 'replace_cell', `+${PLAN.denied}`);
  if (!denied.text.includes(`-${PLAN.original}`)) {
    throw new Error(`the panel does not show the line it replaces: ${denied.text}`);
  }
  await shot(page, 'diff-shown');
  await click(denied.panel, 'Deny');
  const approved = await panelFor(page, 'replace_cell', `+${PLAN.approved}`);
  result.afterDeny = await sourceOf(page, target);

  // 2. The second proposal, approved, changes the cell.
  await click(approved.panel, 'Approve');
  result.afterApprove = await waitFor(page, 'the approved write', (app, panel, a) => {
    const s = panel.content.model.cells.get(a.i).sharedModel.getSource();
    return s === a.want ? s : null;
  }, { i: target, want: PLAN.approved });

  if (PLAN.full) {
    await overwriteMoveDelete(page);
  }
  await click((await panelFor(page, 'apply_patch', PLAN.note)).panel, 'Approve');
  const card = page.locator('.jp-Notebook .jp-Cell').nth(PLAN.agent_index);
  await card.getByText(PLAN.done).first().waitFor({ state: 'visible', timeout: TIMEOUT });
  result.cardText = (await card.locator('.jp-Cell-outputArea').first().textContent()) || '';
  result.afterConflict = await sourceOf(page, target);
  result.cells = await cellsOf(page);
  await shot(page, 'turn-done');
  const undo = card.locator('button.jupyter-button', { hasText: /^\s*Undo turn\s*$/ }).first();
  if (PLAN.full) {
    await refusedThenBadgeUndo(page, card, undo, result);
  }
  await undo.click();
  await card.getByText('undid turn').first().waitFor({ state: 'visible', timeout: TIMEOUT });
  result.undone = (await card.locator('.jp-Cell-outputArea').first().textContent()) || '';
  result.afterUndo = await cellsOf(page);
  await shot(page, 'undone');
});

/** 3. A third proposal; before the click the person types into the cell, key by key. */
async function overwriteMoveDelete(page) {
  const target = PLAN.target_index;
  const third = await panelFor(page, 'replace_cell', `+${PLAN.overwrite}`);
  const editor = page.locator('.jp-Notebook .jp-Cell').nth(target).locator('.cm-content');
  await editor.click();
  await page.keyboard.press('Control+End');
  await page.keyboard.type(PLAN.typed, { delay: DELAY });
  await waitFor(page, 'the typing in the model', (app, panel, a) =>
    panel.content.model.cells.get(a.i).sharedModel.getSource().endsWith(a.typed), { i: target, typed: PLAN.typed });
  await click(third.panel, 'Approve');

  // 4. A move and a delete, each shown before it is approved.
  await click((await panelFor(page, 'move_cell', PLAN.move_shows)).panel, 'Approve');
  const gone = await panelFor(page, 'delete_cell', PLAN.delete_shows);
  await shot(page, 'delete-shown');
  await click(gone.panel, 'Approve');
}

/** 5. "Undo turn" is refused while the person's typing is in a cell the turn wrote; they take it
 * out. 6. The target cell's badge "Undo": that cell alone goes back. */
async function refusedThenBadgeUndo(page, card, undo, result) {
  const target = PLAN.target_index;
  await undo.click();
  await card.getByText('not undone').first().waitFor({ state: 'visible', timeout: TIMEOUT });
  result.refused = (await card.locator('.jp-Cell-outputArea').first().textContent()) || '';
  await inPanel(page, (app, panel, a) => panel.content.model.cells.get(a.i).sharedModel.setSource(a.back),
    { i: target, back: PLAN.approved });

  result.badge = await inPanel(page, (app, panel, a) => panel.content.model.cells.get(a.i).getMetadata('nbagent'), { i: target });
  const forged = page.locator('.jp-Notebook .jp-Cell[data-nbagent-call-id="call_forged"]');
  await forged.hover();
  await waitFor(page, 'the kernel refusing the forged badge', () =>
    document.querySelector('.jp-Cell[data-nbagent-call-id="call_forged"]')?.dataset.nbagentOffer === 'refused');
  result.forgedButtons = await forged.locator('button.nbagent-undo-cell').count();
  await page.locator('.jp-Notebook .jp-Cell').nth(target).hover();
  await page.locator('.jp-Notebook .jp-Cell').nth(target).locator('button.nbagent-undo-cell').click();
  log('clicked', { label: 'badge Undo' });
  await waitFor(page, 'the cell undone alone', (app, panel, a) =>
    panel.content.model.cells.get(a.i).sharedModel.getSource() === a.want, { i: target, want: PLAN.original });
  result.afterBadgeUndo = await cellsOf(page);
  await shot(page, 'badge-undone');
}
