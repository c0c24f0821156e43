// What the browser scripts share: Debian's chromium launched headless, numbered screenshots, and
// access to the open notebook's panel through the app object (expose_app_in_browser), in
// JupyterLab and in Notebook 7 alike.
import fs from 'node:fs';
import path from 'node:path';
import { chromium } from 'playwright-core';

export const CHROMIUM = process.env.CHROMIUM || '/usr/bin/chromium';
export const TIMEOUT = Number(process.env.NBAGENT_E2E_STEP_TIMEOUT_MS || 60000);

export function env(name) {
  const value = process.env[name];
  if (!value) {
    throw new Error(`missing environment variable ${name}`);
  }
  return value;
}

export const log = (step, extra = {}) => console.log(JSON.stringify({ step, t: Math.round(performance.now()), ...extra }));

export async function launch() {
  return chromium.launch({
    executablePath: CHROMIUM,
    headless: true,
    args: [
      '--headless',
      '--no-sandbox',
      '--disable-gpu',
      '--disable-background-networking',
      '--disable-component-update',
      '--disable-sync',
      '--no-first-run',
      '--disable-dev-shm-usage'
    ]
  });
}

/** `shot(page, name)` writes `NN-name.png` into `dir`, numbered in the order taken. */
export function shooter(dir) {
  fs.mkdirSync(dir, { recursive: true });
  let n = 0;
  return async (page, name) => {
    n += 1;
    const file = path.join(dir, `${String(n).padStart(2, '0')}-${name}.png`);
    await page.screenshot({ path: file, fullPage: false });
    return file;
  };
}

/** Evaluate `fn(app, panel, arg)` in the page, with the panel of the notebook at `nbPath`. */
export async function inPanel(page, nbPath, fn, arg = null) {
  return page.evaluate(
    async ({ src, nbPath, arg }) => {
      const app = window.jupyterapp;
      let panel = null;
      for (const w of app.shell.widgets('main')) {
        if (w.context && w.context.path === nbPath) {
          panel = w;
          break;
        }
      }
      panel = panel || app.shell.currentWidget; // Notebook 7 shows one document
      // eslint-disable-next-line no-new-func
      const f = new Function('app', 'panel', 'arg', `return (${src})(app, panel, arg);`);
      return await f(app, panel, arg);
    },
    { src: fn.toString(), nbPath, arg }
  );
}

/** Open the notebook at `nbPath` in JupyterLab (`ui` 'lab', a fresh workspace) or Notebook 7
 * ('notebook7'), and wait until its kernel is connected and idle. */
export async function openNotebook(page, { base, token, nbPath, ui }) {
  const url = ui === 'lab' ? `${base}/lab/tree/${nbPath}?reset&token=${token}` : `${base}/notebooks/${nbPath}?token=${token}`;
  await page.goto(url, { timeout: TIMEOUT });
  await page.waitForFunction(() => window.jupyterapp && window.jupyterapp.started, null, { timeout: TIMEOUT });
  await waitInPanel(page, nbPath, 'the notebook and an idle kernel', (app, panel) => {
    const kernel = panel && panel.sessionContext.session && panel.sessionContext.session.kernel;
    return kernel && kernel.connectionStatus === 'connected' && kernel.status === 'idle' && panel.content.model;
  });
}

/** Run cell `index` as the Run button does; not awaited (a `--wait` cell would hold it). */
export async function runCell(page, nbPath, index) {
  await inPanel(
    page,
    nbPath,
    (app, panel, i) => {
      panel.content.activeCellIndex = i;
      panel.content.mode = 'command';
      void app.commands.execute('notebook:run-cell');
      return true;
    },
    index
  );
}

/** Poll `inPanel(fn)` until it returns something truthy (bounded). */
export async function waitInPanel(page, nbPath, what, fn, arg = null, timeout = TIMEOUT) {
  const deadline = Date.now() + timeout;
  let last;
  while (Date.now() < deadline) {
    try {
      last = await inPanel(page, nbPath, fn, arg);
      if (last) {
        return last;
      }
    } catch (e) {
      last = String(e);
    }
    await page.waitForTimeout(200);
  }
  throw new Error(`timed out waiting for ${what} (last: ${JSON.stringify(last)})`);
}

/** Run `steps(page, result)` in a fresh browser, then print one JSON result line (what the Python
 * test reads) and exit 0 or 1; a failure leaves `NAME-failure.png` in `artifacts`. */
export async function runInBrowser(artifacts, name, steps, { viewport = { width: 1200, height: 900 } } = {}) {
  fs.mkdirSync(artifacts, { recursive: true });
  const result = { ok: false };
  const browser = await launch();
  const page = await browser.newPage({ viewport });
  try {
    await steps(page, result);
    result.ok = true;
  } catch (e) {
    result.error = String(e && e.stack ? e.stack : e);
    await page.screenshot({ path: path.join(artifacts, `${name}-failure.png`) }).catch(() => undefined);
  } finally {
    await browser.close();
  }
  console.log(JSON.stringify({ step: 'result', ...result }));
  process.exit(result.ok ? 0 : 1);
}
