// Typing test, run by tests/e2e/test_browser.py in JupyterLab (NBAGENT_E2E_UI=lab) and in
// Notebook 7 (=notebook7). What a person enters is typed key by key (keyboard.type with a
// delay, never fill): the deny reason, the arguments editor and the text, email, date, integer
// and number fields of the elicitation form; the checkbox is toggled with Space and the
// choices are picked with the mouse; in a `%%agent --wait` cell or in a background cell.
// Python checks what the MCP server ran and what the model was told; this script checks the
// page (live validation, the decision records, the kernel indicator) and takes the screenshots.
//
// Elements are found by what the panels show, not by layout: the `deny reason` and `arguments`
// labels of the ipywidgets Text/Textarea, the exact button labels (Deny, Approve, Accept), and
// for a form field the row (.widget-hbox) whose label (.widget-html) starts with the field's
// title; only visible ones count (a decided panel keeps its hidden inputs).
import { env, inPanel, log, openNotebook, runCell as runNotebookCell, runInBrowser, shooter, TIMEOUT, waitInPanel } from './browser.mjs';

const BASE = env('NBAGENT_E2E_URL');
const TOKEN = env('NBAGENT_E2E_TOKEN');
const NOTEBOOK = env('NBAGENT_E2E_NOTEBOOK');
const UI = env('NBAGENT_E2E_UI');
const PLAN = JSON.parse(env('NBAGENT_E2E_PLAN'));
const ARTIFACTS = env('NBAGENT_E2E_ARTIFACTS');
const shot = shooter(ARTIFACTS);
const DELAY = Number(process.env.NBAGENT_E2E_KEY_DELAY_MS || 40);

const exact = label => new RegExp(`^\\s*${label}\\s*$`);

const runCell = (page, index) => runNotebookCell(page, NOTEBOOK, index);

const kernelStatus = page => inPanel(page, NOTEBOOK, (app, panel) => panel.sessionContext.session.kernel.status);

/** The last visible element of `selector` in `cell`, optionally the one labelled `label`. */
async function visible(page, cell, selector, label = null) {
  let found = cell.locator(selector);
  if (label) {
    found = found.filter({ has: page.locator('label', { hasText: exact(label) }) });
  }
  found = found.filter({ visible: true }).last();
  await found.waitFor({ state: 'visible', timeout: TIMEOUT });
  return found;
}

async function button(cell, label) {
  const found = cell.locator('button.jupyter-button').filter({ hasText: exact(label) }).filter({ visible: true }).last();
  await found.waitFor({ state: 'visible', timeout: TIMEOUT });
  return found;
}

/** The input of the visible form row whose label starts with `title`. */
async function fieldInput(page, cell, title, inner) {
  const row = cell
    .locator('.widget-hbox')
    .filter({ has: page.locator('.widget-html', { hasText: new RegExp(`^\\s*${title}`, 'i') }) })
    .filter({ visible: true })
    .last();
  await row.waitFor({ state: 'visible', timeout: TIMEOUT });
  return row.locator(inner).first();
}

async function typeInto(page, target, text, { replace = false } = {}) {
  await target.click();
  if (replace) {
    await page.keyboard.press('Control+A');
  }
  await page.keyboard.type(text, { delay: DELAY });
}

async function gone(cell, pattern) {
  const deadline = Date.now() + TIMEOUT;
  while (Date.now() < deadline) {
    if ((await cell.getByText(pattern).filter({ visible: true }).count()) === 0) {
      return;
    }
    await cell.page().waitForTimeout(100);
  }
  throw new Error(`${pattern} is still shown after the field became valid`);
}

async function turn(page, t, result) {
  const cell = page.locator('.jp-Notebook .jp-Cell').nth(t.cell);
  const seen = { mode: t.mode };
  await runCell(page, t.cell);
  log('running', { mode: t.mode });

  // 1. Deny, with a typed reason.
  const reason = (await visible(page, cell, '.widget-text', 'deny reason')).locator('input');
  await reason.scrollIntoViewIfNeeded();
  await shot(page, `${UI}-${t.mode}-card-awaiting-decision`);
  await typeInto(page, reason, t.reason);
  seen.reasonShown = await reason.inputValue();
  seen.statusWhileAsking = await kernelStatus(page);
  await shot(page, `${UI}-${t.mode}-reason-typed`);
  await (await button(cell, 'Deny')).click();
  await cell.getByText(t.reason).filter({ visible: true }).first().waitFor({ state: 'visible', timeout: TIMEOUT });
  await shot(page, `${UI}-${t.mode}-decided`);
  log('denied', { mode: t.mode });

  // 2. Approve, after typing new arguments over the proposed ones.
  const editor = (await visible(page, cell, '.widget-textarea', 'arguments')).locator('textarea');
  await typeInto(page, editor, t.arguments, { replace: true });
  seen.argumentsShown = await editor.inputValue();
  await shot(page, `${UI}-${t.mode}-arguments-typed`);
  await (await button(cell, 'Approve')).click();
  log('approved', { mode: t.mode });

  // 3. The server's form: every field typed, validation live while typing.
  const f = t.form;
  const title = await fieldInput(page, cell, 'title', 'input');
  await title.scrollIntoViewIfNeeded();
  await typeInto(page, title, f.title.slice(0, 2));
  await cell.getByText(/at least 3/).filter({ visible: true }).first().waitFor({ state: 'visible', timeout: TIMEOUT });
  await typeInto(page, await fieldInput(page, cell, 'owner', 'input'), f.owner_email.slice(0, 4));
  await cell.getByText(/not an? .*email/i).filter({ visible: true }).first().waitFor({ state: 'visible', timeout: TIMEOUT });
  await shot(page, `${UI}-${t.mode}-form-live-validation`);
  await typeInto(page, title, f.title.slice(2));
  await gone(cell, /at least 3/);
  await typeInto(page, await fieldInput(page, cell, 'owner', 'input'), f.owner_email.slice(4));
  await gone(cell, /not an? .*email/i);
  await typeInto(page, await fieldInput(page, cell, 'runs', 'input'), String(f.runs), { replace: true });
  await page.keyboard.press('Tab');
  await typeInto(page, await fieldInput(page, cell, 'learning', 'input'), String(f.learning_rate), { replace: true });
  await page.keyboard.press('Tab');
  const pub = await fieldInput(page, cell, 'public', 'input[type=checkbox]');
  await pub.focus();
  await page.keyboard.press('Space');
  // Choices are picked with the mouse: a focused <select> is not :read-write, so in command
  // mode JupyterLab takes its letter and arrow keys as notebook shortcuts ('a' inserts a cell,
  // 'm' makes it Markdown) instead of moving the selection.
  const optimizer = await fieldInput(page, cell, 'optimizer', 'select');
  await optimizer.selectOption({ label: f.optimizer });
  const tags = await fieldInput(page, cell, 'tags', 'select');
  await tags.selectOption(f.tags.map(label => ({ label })));
  await typeInto(page, await fieldInput(page, cell, 'start', 'input'), f.start);
  await page.keyboard.press('Tab');
  seen.formShown = {
    title: await title.inputValue(),
    owner_email: await (await fieldInput(page, cell, 'owner', 'input')).inputValue(),
    start: await (await fieldInput(page, cell, 'start', 'input')).inputValue(),
    optimizer: await optimizer.evaluate(s => s.options[s.selectedIndex].text),
    tags: await tags.evaluate(s => [...s.selectedOptions].map(o => o.text)),
    public: await pub.isChecked()
  };
  await shot(page, `${UI}-${t.mode}-form-filled`);
  await (await button(cell, 'Accept')).click();
  await cell.getByText(/answered/).filter({ visible: true }).first().waitFor({ state: 'visible', timeout: TIMEOUT });
  await shot(page, `${UI}-${t.mode}-form-accepted`);
  log('accepted', { mode: t.mode });

  await cell.getByText(t.done).first().waitFor({ state: 'visible', timeout: TIMEOUT });
  // The cell has finished (a --wait cell only now), and the kernel says idle.
  await waitInPanel(page, NOTEBOOK, 'the cell to finish and the kernel to be idle', (app, panel, i) => {
    const model = panel.content.model.cells.get(i);
    return model.executionCount !== null && model.executionState !== 'running' && panel.sessionContext.session.kernel.status === 'idle';
  }, t.cell);
  seen.statusAfter = await kernelStatus(page);
  result.turns.push(seen);
}

await runInBrowser(ARTIFACTS, `typing-${UI}`, async (page, result) => {
  result.turns = [];
  await openNotebook(page, { base: BASE, token: TOKEN, nbPath: NOTEBOOK, ui: UI });
  log('opened', { ui: UI });
  await runCell(page, 0);
  await runCell(page, 1);
  await waitInPanel(page, NOTEBOOK, 'the session', (app, panel) =>
    (panel.content.model.cells.get(1).toJSON().outputs || []).some(o => String(o.text || '').includes('tools:')));
  for (const t of PLAN.turns) {
    await turn(page, t, result);
  }
}, { viewport: { width: 1400, height: 1000 } });
