// Notebook 7 smoke test, run by tests/e2e/test_browser.py: the same extension serves the
// bridge in Jupyter Notebook's UI. One cell asks the bridge for hello, reads the notebook and
// inserts a cell; the page must show the agent-cell marker.
import fs from 'node:fs';
import path from 'node:path';
import { launch } from './browser.mjs';

const BASE = process.env.NBAGENT_E2E_URL;
const TOKEN = process.env.NBAGENT_E2E_TOKEN;
const NOTEBOOK = process.env.NBAGENT_E2E_NOTEBOOK;
const ARTIFACTS = process.env.NBAGENT_E2E_ARTIFACTS;
const TIMEOUT = Number(process.env.NBAGENT_E2E_STEP_TIMEOUT_MS || 60000);

fs.mkdirSync(ARTIFACTS, { recursive: true });
const result = { ok: false };
const browser = await launch();
const page = await browser.newPage({ viewport: { width: 1200, height: 900 } });
try {
  await page.goto(`${BASE}/notebooks/${NOTEBOOK}?token=${TOKEN}`, { timeout: TIMEOUT });
  await page.locator('.jp-Notebook .jp-Cell').first().waitFor({ state: 'visible', timeout: TIMEOUT });
  // Run only once the kernel is connected and idle (a key press before that runs nothing).
  await page.waitForFunction(
    () => {
      const panel = window.jupyterapp && window.jupyterapp.shell.currentWidget;
      const kernel = panel && panel.sessionContext && panel.sessionContext.session && panel.sessionContext.session.kernel;
      return kernel && kernel.connectionStatus === 'connected' && kernel.status === 'idle';
    },
    null,
    { timeout: TIMEOUT }
  );
  await page.locator('.jp-Cell .cm-content').first().click();
  await page.keyboard.press('Shift+Enter'); // runs it and adds an empty cell below
  const line = page.getByText(/^BRIDGE Jupyter Notebook /);
  await line.first().waitFor({ state: 'visible', timeout: TIMEOUT });
  result.line = (await line.first().textContent()).trim();
  await page.locator('.nbagent-agent-cell').first().waitFor({ state: 'visible', timeout: TIMEOUT });
  result.marked = await page.locator('.nbagent-agent-cell').count();
  // The write only marked the notebook dirty (autosave is off by default): save it as a user would.
  result.dirty = await page.evaluate(() => window.jupyterapp.shell.currentWidget.context.model.dirty);
  await page.evaluate(() => window.jupyterapp.commands.execute('docmanager:save'));
  await page.screenshot({ path: path.join(ARTIFACTS, 'notebook7.png') });
  result.ok = true;
} catch (e) {
  result.error = String(e && e.stack ? e.stack : e);
  await page.screenshot({ path: path.join(ARTIFACTS, 'notebook7-failure.png') }).catch(() => undefined);
} finally {
  await browser.close();
}
console.log(JSON.stringify({ step: 'result', ...result }));
process.exit(result.ok ? 0 : 1);
