// The "Resume" offer with crafted notebook metadata, run by tests/security/test_untrusted_resume.py.
// The notebook lists a hostile "id" (code after a newline), a well-formed id of no thread and one
// real thread. The script records which Resume buttons are offered, clicks any that is not a
// thread id, asks the resume command directly for the hostile id, then resumes the real thread and
// waits for its cell to print: cells run in order, so anything queued before it has run by then.
import path from 'node:path';
import { TIMEOUT, env, runInBrowser } from './browser.mjs';

const BASE = env('NBAGENT_E2E_URL');
const TOKEN = env('NBAGENT_E2E_TOKEN');
const NOTEBOOK = env('NBAGENT_E2E_NOTEBOOK');
const ARTIFACTS = env('NBAGENT_E2E_ARTIFACTS');

const HOSTILE = process.env.NBAGENT_E2E_HOSTILE_ID;
const REAL = process.env.NBAGENT_E2E_REAL_ID;

await runInBrowser(ARTIFACTS, 'resume', async (page, result) => {
  const resume = id =>
    page.evaluate(
      ([id, nb]) => window.jupyterapp.commands.execute('nbagent:resume-thread', { id, path: nb }),
      [id, NOTEBOOK]
    );
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
  await resume(HOSTILE); // the command itself, as another extension or a shortcut could call it
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
});
