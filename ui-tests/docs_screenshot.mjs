// Screenshot of a rendered docs page: the executed walkthrough's widgets drawn from their saved
// state by the widget manager the site serves itself. The site is served on 127.0.0.1 only and
// every request elsewhere is refused, so the shot proves the page renders offline. Exits non-zero
// when the approval panel does not render (waits on the rendered widget's selector, no sleeps).
//
//   node ui-tests/docs_screenshot.mjs [PAGE...] [--site build/docs/html] [--out test-artifacts/docs]
//   PAGE: an executed walkthrough's name, e.g. 04-approval (the default) or 00-quickstart
import fs from 'node:fs';
import http from 'node:http';
import path from 'node:path';
import { parseArgs } from 'node:util';
import { TIMEOUT, launch, log } from './browser.mjs';

const { values, positionals } = parseArgs({
  allowPositionals: true,
  options: { site: { type: 'string', default: 'build/docs/html' }, out: { type: 'string', default: 'test-artifacts/docs' } }
});
const pages = positionals.length ? positionals : ['04-approval'];
const site = path.resolve(values.site);
const pathOf = (page) => `walkthroughs/executed/${page}.html`;
for (const page of pages) {
  if (!fs.existsSync(path.join(site, pathOf(page)))) {
    console.error(`docs_screenshot: ${path.join(site, pathOf(page))} does not exist (build the docs with \`make docs\`; is ${page} executed?)`);
    process.exit(1);
  }
}

const TYPES = { '.html': 'text/html', '.js': 'text/javascript', '.css': 'text/css', '.svg': 'image/svg+xml',
  '.woff': 'font/woff', '.woff2': 'font/woff2', '.ttf': 'font/ttf', '.png': 'image/png', '.json': 'application/json' };

/** A static server for `site` on 127.0.0.1 (a path outside it is refused). */
function serve() {
  const server = http.createServer((req, res) => {
    const file = path.join(site, decodeURIComponent(new URL(req.url, 'http://x').pathname));
    if (!file.startsWith(site + path.sep) || !fs.existsSync(file) || !fs.statSync(file).isFile()) {
      res.writeHead(404).end();
      return;
    }
    res.writeHead(200, { 'content-type': TYPES[path.extname(file)] || 'application/octet-stream' });
    fs.createReadStream(file).pipe(res);
  });
  return new Promise((resolve) => server.listen(0, '127.0.0.1', () => resolve(server)));
}

const server = await serve();
const origin = `http://127.0.0.1:${server.address().port}`;
const browser = await launch();
let status = 0;
try {
  for (const page of pages) {
    const relative = pathOf(page);
    const tab = await browser.newPage({ viewport: { width: 1280, height: 1000 } });
    const refused = [];
    await tab.route('**/*', (route) => {
      const url = route.request().url();
      if (url.startsWith(origin + '/') || url.startsWith('data:')) {
        return route.continue();
      }
      refused.push(url);
      return route.abort();
    });
    const errors = [];
    const missing = [];
    tab.on('pageerror', (err) => errors.push(String(err)));
    tab.on('response', (res) => res.status() >= 400 && missing.push(`${res.status()} ${res.url()}`));
    await tab.goto(`${origin}/${relative}`);
    log('loaded', { page: relative });
    // The approval panel as the widget manager draws it (nbagent/notebook/approval.py): a box whose
    // body holds the row of decision buttons, Approve among them; once decided, the body is hidden
    // and the panel shows the recorded decision instead.
    const approve = tab.locator('button.nbagent-decision', { hasText: /^\s*Approve\s*$/ });
    const panel = tab.locator('.widget-vbox:has(> .widget-vbox > .widget-hbox > button.nbagent-decision)', { has: approve }).first();
    let rendered = true;
    try {
      await panel.waitFor({ state: 'visible', timeout: TIMEOUT });
    } catch (err) {
      rendered = false;
      status = 1;
      console.error(`docs_screenshot: no rendered approval panel on ${relative} within ${TIMEOUT} ms`
        + (errors.length ? ` (page errors: ${errors.join('; ')})` : ''));
    }
    if (rendered) {
      const card = tab.locator('.cell_output', { has: panel }).first(); // the turn around the panel
      await card.scrollIntoViewIfNeeded();
      fs.mkdirSync(values.out, { recursive: true });
      const file = path.join(values.out, `${page}-approval.png`);
      const full = path.join(values.out, `${page}.png`);
      await tab.screenshot({ path: full });
      // A turn taller than the window is shot in pieces: the theme's sticky header, skip link and
      // back-to-top button would cover parts of it, so they are hidden for the element's shot.
      await tab.addStyleTag({ content: '.bd-header, .skip-link, #pst-back-to-top { display: none !important; }' });
      await card.screenshot({ path: file });
      const text = (await panel.innerText()).replace(/\s+/g, ' ').trim().slice(0, 200);
      log('approval panel', { page, panel: text, shot: file, viewport: full, widgets: await tab.locator('.jupyter-widgets').count() });
    }
    if (refused.length || missing.length) {
      log('not loaded', { refused: refused.slice(0, 5), missing: missing.slice(0, 5) });
    }
    await tab.close();
  }
} finally {
  await browser.close();
  server.close();
}
process.exit(status);
