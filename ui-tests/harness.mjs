// Shared by browser scripts: headless chromium, one page, a screenshot on failure, and one
// JSON result line on stdout (what the Python test reads); the exit code says ok or not.
import fs from 'node:fs';
import path from 'node:path';
import { chromium } from 'playwright-core';

export const env = {
  base: process.env.NBAGENT_E2E_URL,
  token: process.env.NBAGENT_E2E_TOKEN,
  notebook: process.env.NBAGENT_E2E_NOTEBOOK,
  artifacts: process.env.NBAGENT_E2E_ARTIFACTS,
  timeout: Number(process.env.NBAGENT_E2E_STEP_TIMEOUT_MS || 90000)
};

/** Run `steps(page, result)` in a fresh browser; `name` prefixes the failure screenshot. */
export async function runInBrowser(name, steps) {
  fs.mkdirSync(env.artifacts, { recursive: true });
  const result = { ok: false };
  const browser = await chromium.launch({
    executablePath: process.env.CHROMIUM || '/usr/bin/chromium',
    headless: true,
    args: ['--headless', '--no-sandbox', '--disable-gpu', '--disable-background-networking',
      '--disable-component-update', '--disable-sync', '--no-first-run', '--disable-dev-shm-usage']
  });
  const page = await browser.newPage({ viewport: { width: 1200, height: 900 } });
  try {
    await steps(page, result);
    result.ok = true;
  } catch (e) {
    result.error = String(e && e.stack ? e.stack : e);
    await page.screenshot({ path: path.join(env.artifacts, `${name}-failure.png`) }).catch(() => undefined);
  } finally {
    await browser.close();
  }
  console.log(JSON.stringify({ step: 'result', ...result }));
  process.exit(result.ok ? 0 : 1);
}
