// The "Resume" offer with crafted notebook metadata, run by tests/security/test_untrusted_resume.py.
// The notebook lists a hostile "id" (code after a newline), a well-formed id of no thread and one
// real thread. The script records which Resume buttons are offered, clicks any that is not a
// thread id, asks the resume command directly for the hostile id, then resumes the real thread and
// waits for its cell to print: cells run in order, so anything queued before it has run by then.
import fs from 'node:fs';
import path from 'node:path';
import { chromium } from 'playwright-core';

const BASE = process.env.NBAGENT_E2E_URL;
const TOKEN = process.env.NBAGENT_E2E_TOKEN;
const NOTEBOOK = process.env.NBAGENT_E2E_NOTEBOOK;
const ARTIFACTS = process.env.NBAGENT_E2E_ARTIFACTS;
const HOSTILE = process.env.NBAGENT_E2E_HOSTILE_ID;
const REAL = process.env.NBAGENT_E2E_REAL_ID;
const CHROMIUM = process.env.CHROMIUM || '/usr/bin/chromium';
const TIMEOUT = Number(process.env.NBAGENT_E2E_STEP_TIMEOUT_MS || 90000);

fs.mkdirSync(ARTIFACTS, { recursive: true });
const result = { ok: false, offered: [] };
const browser = await chromium.launch({
  executablePath: CHROMIUM,
  headless: true,
  args: ['--headless', '--no-sandbox', '--disable-gpu', '--disable-background-networking',
    '--disable-component-update', '--disable-sync', '--no-first-run', '--disable-dev-shm-usage']
});
const page = await browser.newPage({ viewport: { width: 1200, height: 900 } });
const resume = (id) =>
  page.evaluate(
    ([id, nb]) => window.jupyterapp.commands.execute('nbagent:resume-thread', { id, path: nb }),
    [id, NOTEBOOK]
  );
try {
  await page.goto(`${BASE}/lab/tree/${NOTEBOOK}?token=${TOKEN}`, { timeout: TIMEOUT });
  await page.locator('.jp-Notebook .jp-Cell').first().waitFor({ state: 'visible', timeout: TIMEOUT });
  const toast = page.locator('.Toastify__toast', { hasText: 'nbagent thread' });
  await toast.first().waitFor({ state: 'visible', timeout: TIMEOUT });
  const buttons = toast.first().locator('button', { hasText: 'Resume' });
  result.offered = (await buttons.allTextContents()).map(t => t.trim());
  await page.screenshot({ path: path.join(ARTIFACTS, 'resume-offer.png') });
  const hostile = result.offered.findIndex(label => !label.startsWith('Resume thread_'));
  if (hostile >= 0) {
    await buttons.nth(hostile).click(); // what a user would do with a crafted notebook
  }
  await resume(HOSTILE); // the command itself, as another extension or a keyboard shortcut could call it
  const real = result.offered.findIndex(label => label.startsWith(`Resume ${REAL.slice(0, 16)}`));
  if (hostile < 0 && real >= 0) {
    await buttons.nth(real).click();
  } else {
    await resume(REAL);
  }
  const done = page.locator('.jp-OutputArea-output', { hasText: `resumed thread ${REAL}` });
  await done.first().waitFor({ state: 'visible', timeout: TIMEOUT });
  result.sources = await page.evaluate(() =>
    window.jupyterapp.shell.currentWidget.content.model.sharedModel.cells.map(c => c.getSource())
  );
  await page.screenshot({ path: path.join(ARTIFACTS, 'resume-done.png') });
  result.ok = true;
} catch (e) {
  result.error = String(e && e.stack ? e.stack : e);
  await page.screenshot({ path: path.join(ARTIFACTS, 'resume-failure.png') }).catch(() => undefined);
} finally {
  await browser.close();
}
console.log(JSON.stringify({ step: 'result', ...result }));
process.exit(result.ok ? 0 : 1);
