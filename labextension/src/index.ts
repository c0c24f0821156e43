/**
 * The nbagent JupyterLab / Notebook 7 plugin: wires each notebook panel's kernel to a
 * `NotebookBridgeModel`, marks the cells the agent wrote, and offers to resume the threads
 * recorded in the notebook's metadata.
 */
import { JupyterFrontEnd, JupyterFrontEndPlugin } from '@jupyterlab/application';
import { Notification } from '@jupyterlab/apputils';
import { Cell, CodeCell, MarkdownCell } from '@jupyterlab/cells';
import { INotebookTracker, NotebookPanel } from '@jupyterlab/notebook';
import type { Kernel } from '@jupyterlab/services';
import { ISettingRegistry } from '@jupyterlab/settingregistry';

import { COMM_TARGET, MAX_CHECKED_CELLS, Provenance } from './bridge_protocol';
import { INotebookHost, METADATA_KEY, NotebookBridgeModel, readProvenance, THREAD_ID, wellFormedThreadIds } from './model';

// The bundler inlines package.json; declared here so the typings need no @types/node.
declare function require(name: string): any;
const VERSION: string = require('../package.json').version;

export namespace CommandIDs {
  export const resume = 'nbagent:resume-thread';
}

/** CSS class of nbagent's answer buttons (nbagent/notebook/buttons.py `DECISION_CLASS`). */
export const DECISION_CLASS = 'nbagent-decision';

/** CSS class of a cell an agent call wrote. */
export const AGENT_CELL_CLASS = 'nbagent-agent-cell';

class PanelHost implements INotebookHost {
  constructor(
    private panel: NotebookPanel,
    readonly appName: string
  ) {}

  get model() {
    return this.panel.content.model;
  }

  get path() {
    return this.panel.context.path;
  }

  async save(): Promise<void> {
    await this.panel.context.save();
  }

  async runCell(cellId: string, wait: boolean): Promise<'ok' | 'error' | 'aborted' | 'queued'> {
    const cell = this.panel.content.widgets.find(c => c.model.id === cellId);
    if (!cell) {
      throw new Error(`no cell with id ${cellId}`);
    }
    if (cell instanceof MarkdownCell) {
      cell.rendered = true;
      return 'ok';
    }
    if (!(cell instanceof CodeCell)) {
      return 'ok';
    }
    const done = CodeCell.execute(cell, this.panel.sessionContext);
    if (!wait) {
      done.catch(() => undefined);
      return 'queued';
    }
    const reply = await done;
    const status = reply ? reply.content.status : 'aborted';
    return status === 'ok' ? 'ok' : status === 'error' ? 'error' : 'aborted';
  }
}

/** CSS class of the "Undo" button on an agent cell's badge. */
export const UNDO_CELL_CLASS = 'nbagent-undo-cell';

/** CSS class of an agent cell's badge: a line of its own above the input, so the active cell's
 * toolbar (top right of the input) covers neither the badge nor its "Undo". */
export const BADGE_CLASS = 'nbagent-badge';

/** The badge of `cell`, made on first use, kept right above the input (a cell not rendered yet
 * has no input: `markAgentCells` puts the badge in place again once it has). */
function badgeOf(cell: Cell): HTMLElement {
  let badge = cell.node.querySelector<HTMLElement>(`:scope > .${BADGE_CLASS}`);
  if (!badge) {
    badge = document.createElement('div');
    badge.className = BADGE_CLASS;
    const label = document.createElement('span');
    label.className = `${BADGE_CLASS}-label`;
    label.textContent = 'nbagent';
    badge.appendChild(label);
  }
  const input = cell.node.querySelector(':scope > .jp-Cell-inputWrapper');
  if (badge.nextElementSibling !== input || !badge.parentElement) {
    cell.node.insertBefore(badge, input);
  }
  return badge;
}

/** What the badge's tooltip claims: no more than the kernel confirmed. The cell's metadata is
 * written by whoever sent the notebook, so until the kernel finds the call in its own rollout
 * the tooltip only says what the metadata says. */
function claim(cell: Cell, provenance: Provenance, confirmed: 'unasked' | 'confirmed' | 'refused'): void {
  const { thread_id, turn_id, call_id } = provenance;
  const text =
    confirmed === 'confirmed'
      ? `Written by nbagent in this kernel: thread ${thread_id}, turn ${turn_id}, call ${call_id}`
      : confirmed === 'refused'
        ? `Not confirmed: this cell's metadata names nbagent call ${call_id} (thread ${thread_id}), which this kernel did not make or has undone`
        : `Not confirmed yet: this cell's metadata says nbagent call ${call_id} (thread ${thread_id}, turn ${turn_id}) wrote it`;
  const badge = badgeOf(cell);
  badge.title = text;
  badge.dataset.nbagentClaim = confirmed;
  cell.node.title = text;
}

/** The badge's "Undo": asks the kernel to undo the call that wrote the cell. The kernel looks the
 * call up in its own rollout and refuses one it did not make, since metadata is forgeable. */
function undoButton(bridge: NotebookBridgeModel, provenance: Provenance): HTMLButtonElement {
  const button = document.createElement('button');
  button.className = UNDO_CELL_CLASS;
  button.textContent = 'Undo';
  button.title = 'Put this cell back as it was before the agent changed it (a cell it inserted is removed)';
  button.addEventListener('click', async event => {
    event.stopPropagation();
    button.disabled = true;
    const { thread_id, turn_id, call_id } = provenance;
    const reply = await bridge.askKernel('undo_cell', { thread_id, turn_id, call_id });
    button.disabled = false;
    if (reply.ok) {
      button.remove(); // that call is undone now
    }
    Notification.emit(reply.message, reply.ok ? 'success' : 'warning', { autoClose: reply.ok ? 5000 : false });
  });
  return button;
}

/** Draw what the kernel said of the call that wrote `cell` (if the cell still names it) and, when
 * the kernel made it, add "Undo" to the badge. A refused cell is asked again on the next hover. */
function settle(cell: Cell, bridge: NotebookBridgeModel, call_id: string, confirmed: boolean): void {
  const now = readProvenance(cell.model.getMetadata(METADATA_KEY));
  if (now?.call_id === call_id) {
    claim(cell, now, confirmed ? 'confirmed' : 'refused');
    if (confirmed && !cell.node.querySelector(`.${UNDO_CELL_CLASS}`)) {
      badgeOf(cell).appendChild(undoButton(bridge, now));
    }
  }
  cell.node.dataset.nbagentOffer = confirmed ? 'offered' : 'refused';
}

/** Ask the kernel, when the pointer first enters an agent cell the page has not asked about yet,
 * whether it made that call (in its own rollout, not undone); only then is "Undo" added. */
function offerUndo(cell: Cell, bridge: NotebookBridgeModel): void {
  if (cell.node.dataset.nbagentOffer) {
    return;
  }
  cell.node.dataset.nbagentOffer = 'watching';
  cell.node.addEventListener('mouseenter', async () => {
    const provenance = readProvenance(cell.model.getMetadata(METADATA_KEY));
    if (!provenance || cell.node.dataset.nbagentOffer === 'asking' || cell.node.querySelector(`.${UNDO_CELL_CLASS}`)) {
      return;
    }
    cell.node.dataset.nbagentOffer = 'asking';
    const { thread_id, turn_id, call_id } = provenance;
    const reply = await bridge.askKernel('check_cell', { thread_id, turn_id, call_id }, 10000);
    settle(cell, bridge, call_id, reply.ok);
  });
}

/** Longest id of a badge the page asks about in `check_cells`; real ids are far shorter, and a
 * forged one is asked about only on hover, so forged metadata cannot swell the request. */
const MAX_CHECKED_ID_CHARS = 200;

/** Once a kernel talks to this page, ask it in one request about the badges not asked about yet
 * (the first `MAX_CHECKED_CELLS`), so an opened or reloaded notebook shows at once which badges
 * the kernel confirms. The rest, and all of them when no answer comes (a kernel busy, or one
 * that predates `check_cells`), are asked on hover. */
async function confirmAgentCells(panel: NotebookPanel, bridge: NotebookBridgeModel): Promise<void> {
  const asked: { cell: Cell; provenance: Provenance }[] = [];
  for (const cell of panel.content.widgets) {
    const provenance = readProvenance(cell.model.getMetadata(METADATA_KEY));
    const ids = provenance ? [provenance.thread_id, provenance.turn_id, provenance.call_id] : [];
    if (provenance && cell.node.dataset.nbagentOffer === 'watching' && ids.every(id => id.length <= MAX_CHECKED_ID_CHARS)) {
      asked.push({ cell, provenance });
      if (asked.length === MAX_CHECKED_CELLS) {
        break;
      }
    }
  }
  if (asked.length === 0) {
    return;
  }
  asked.forEach(({ cell }) => (cell.node.dataset.nbagentOffer = 'asking'));
  const cells = asked.map(({ provenance: { thread_id, turn_id, call_id } }) => ({ thread_id, turn_id, call_id }));
  const reply = await bridge.askKernel('check_cells', { cells }, 10000);
  const confirmed = reply.confirmed;
  asked.forEach(({ cell, provenance }, i) => {
    if (Array.isArray(confirmed) && confirmed.length === asked.length) {
      settle(cell, bridge, provenance.call_id, confirmed[i] === true);
    } else {
      cell.node.dataset.nbagentOffer = 'watching';
    }
  });
}

/** Add the marker class, a tooltip and (once the kernel confirms it) "Undo" to every cell
 * carrying agent provenance. */
function markAgentCells(panel: NotebookPanel, bridge: NotebookBridgeModel): void {
  for (const cell of panel.content.widgets) {
    const provenance = readProvenance(cell.model.getMetadata(METADATA_KEY));
    cell.toggleClass(AGENT_CELL_CLASS, provenance !== null);
    const changed = cell.node.dataset.nbagentCallId !== provenance?.call_id;
    if (changed) {
      cell.node.querySelector(`.${UNDO_CELL_CLASS}`)?.remove(); // another call's, or none now
    }
    if (provenance) {
      offerUndo(cell, bridge);
      if (changed) {
        cell.node.dataset.nbagentCallId = provenance.call_id;
        claim(cell, provenance, 'unasked');
      }
      void cell.ready.then(() => badgeOf(cell));
    } else if (cell.node.dataset.nbagentCallId) {
      delete cell.node.dataset.nbagentCallId;
      cell.node.removeAttribute('title');
      cell.node.querySelector(`:scope > .${BADGE_CLASS}`)?.remove();
    }
  }
}

/** The extension's settings (schema/bridge.json), shared by every notebook's bridge. */
class BridgeSettings {
  autosave = false;
  readonly bridges = new Set<NotebookBridgeModel>();

  load(settings: ISettingRegistry.ISettings): void {
    const apply = () => {
      this.autosave = settings.composite.autosave === true;
      this.bridges.forEach(b => (b.autosave = this.autosave));
    };
    apply();
    settings.changed.connect(apply);
  }
}

/**
 * After a click on one of nbagent's answer buttons (approval panel, question form), give the
 * keyboard back to the notebook, in command mode and on the cell that was active before the
 * click, so Shift+Enter goes on from where the user was (the click made the agent cell active).
 */
function returnFocusAfterAnswers(panel: NotebookPanel): void {
  const notebook = panel.content;
  let before: number | null = null;
  const isAnswer = (event: Event) =>
    event.target instanceof Element && event.target.closest(`.${DECISION_CLASS}`) !== null;
  notebook.node.addEventListener(
    'mousedown',
    event => {
      before = isAnswer(event) ? notebook.activeCellIndex : null;
    },
    true
  );
  notebook.node.addEventListener('click', event => {
    if (!isAnswer(event) || before === null) {
      return;
    }
    const index = before;
    before = null;
    requestAnimationFrame(() => {
      if (notebook.isDisposed) {
        return;
      }
      notebook.mode = 'command';
      if (index < notebook.widgets.length) {
        notebook.activeCellIndex = index;
      }
      notebook.node.focus();
    });
  });
}

function watchPanel(app: JupyterFrontEnd, panel: NotebookPanel, settings: BridgeSettings): void {
  const bridge = new NotebookBridgeModel(new PanelHost(panel, app.name), VERSION);
  bridge.autosave = settings.autosave;
  settings.bridges.add(bridge);
  panel.disposed.connect(() => settings.bridges.delete(bridge));
  returnFocusAfterAnswers(panel);
  const register = (kernel: Kernel.IKernelConnection | null | undefined) => {
    kernel?.registerCommTarget(COMM_TARGET, (comm, msg) => bridge.attach(comm, msg));
    if (kernel) {
      void announce(kernel, bridge);
    }
  };
  bridge.onAttach = () =>
    void panel.context.ready.then(() => {
      if (!panel.isDisposed) {
        markAgentCells(panel, bridge);
        void confirmAgentCells(panel, bridge);
      }
    });
  register(panel.sessionContext.session?.kernel);
  panel.sessionContext.kernelChanged.connect((_, change) => register(change.newValue));

  let pending = false;
  const schedule = () => {
    if (!pending) {
      pending = true;
      requestAnimationFrame(() => {
        pending = false;
        if (!panel.isDisposed) {
          markAgentCells(panel, bridge);
        }
      });
    }
  };
  panel.content.modelContentChanged.connect(schedule);

  void panel.context.ready.then(() => {
    markAgentCells(panel, bridge);
    void offerResume(app, panel, wellFormedThreadIds(bridge.threads()));
  });
}

/**
 * When this page loads on a kernel whose nbagent already talks to the notebook (it has bridge
 * comms open: the page was reloaded, or this is a second tab), say hello on a comm of this
 * page's own, so the kernel's next request comes here at once. A kernel without such comms has
 * not met a page yet and says hello itself when it needs one; asking first keeps a kernel
 * without nbagent from being sent a comm it has no target for.
 */
async function announce(kernel: Kernel.IKernelConnection, bridge: NotebookBridgeModel): Promise<void> {
  try {
    const reply = await kernel.requestCommInfo({ target_name: COMM_TARGET });
    const comms = reply.content.status === 'ok' ? reply.content.comms : {};
    if (Object.keys(comms).length > 0 && !kernel.isDisposed) {
      bridge.announce(kernel.createComm(COMM_TARGET));
    }
  } catch (reason) {
    console.warn(`nbagent: could not offer this page to the kernel's agent: ${reason}`);
  }
}

/**
 * Which of `ids` name threads in the kernel's local store. The ids go to the kernel as JSON
 * data inside a fixed expression, after the format check: metadata is written by whoever sent
 * the notebook, so nothing from it is ever pasted into code.
 */
async function knownThreads(panel: NotebookPanel, ids: string[]): Promise<string[]> {
  await panel.sessionContext.ready;
  const kernel = panel.sessionContext.session?.kernel;
  if (!kernel || ids.length === 0) {
    return [];
  }
  const expression =
    "__import__('nbagent.notebook.resume_offer', fromlist=['resumable']).resumable(" +
    JSON.stringify(JSON.stringify(ids)) +
    ')';
  const reply = await kernel.requestExecute({
    code: '',
    silent: true,
    store_history: false,
    user_expressions: { nbagent: expression }
  }).done;
  const result = (reply.content as any).user_expressions?.nbagent;
  if (!result || result.status !== 'ok') {
    return []; // nbagent is not installed in this kernel: nothing to resume there
  }
  try {
    const known = JSON.parse(String(result.data?.['text/plain'] ?? '[]'));
    const found = new Set(Array.isArray(known) ? known : []);
    return ids.filter(id => found.has(id));
  } catch {
    return [];
  }
}

/** Reopening a notebook with recorded threads offers to resume the latest ones that exist here. */
async function offerResume(app: JupyterFrontEnd, panel: NotebookPanel, candidates: string[]): Promise<void> {
  const threads = await knownThreads(panel, candidates).catch(() => [] as string[]);
  if (threads.length === 0 || panel.isDisposed) {
    return;
  }
  const latest = threads.slice(-3).reverse();
  Notification.info(
    `This notebook has ${threads.length} nbagent thread(s). Resume one in the kernel?`,
    {
      autoClose: false,
      actions: latest.map(id => ({
        label: `Resume ${id.slice(0, 16)}…`,
        caption: `Run %agent resume ${id}`,
        callback: () => void app.commands.execute(CommandIDs.resume, { id, path: panel.context.path })
      }))
    }
  );
}

const plugin: JupyterFrontEndPlugin<void> = {
  id: 'nbagent:bridge',
  description: 'Lets the nbagent agent in the kernel read and write this notebook.',
  autoStart: true,
  requires: [INotebookTracker],
  optional: [ISettingRegistry],
  activate: (app: JupyterFrontEnd, tracker: INotebookTracker, registry: ISettingRegistry | null) => {
    const settings = new BridgeSettings();
    if (registry) {
      void registry
        .load(plugin.id)
        .then(s => settings.load(s))
        .catch(reason => console.warn(`nbagent: settings not loaded (autosave stays off): ${reason}`));
    }
    app.commands.addCommand(CommandIDs.resume, {
      label: 'Resume nbagent thread',
      execute: async args => {
        const id = String(args.id ?? '');
        const panel = tracker.find(p => p.context.path === args.path) ?? tracker.currentWidget;
        if (!THREAD_ID.test(id) || !panel || !panel.content.model) {
          // Only a well-formed id reaches the cell: it is plain letters, digits and '_'.
          return;
        }
        // A visible cell, so the user sees the resumed thread's status where it runs.
        const model = panel.content.model;
        const index = model.cells.length;
        model.sharedModel.insertCell(index, {
          cell_type: 'code',
          source: `%load_ext nbagent\n%agent resume ${id}`
        } as any);
        const cell = panel.content.widgets[index];
        panel.content.activeCellIndex = index;
        if (cell instanceof CodeCell) {
          await CodeCell.execute(cell, panel.sessionContext);
        }
      }
    });
    tracker.widgetAdded.connect((_, panel) => watchPanel(app, panel, settings));
    tracker.forEach(panel => watchPanel(app, panel, settings));
  }
};

export default plugin;
