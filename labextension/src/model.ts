/**
 * The bridge logic, without DOM: turns kernel requests into notebook model changes.
 *
 * Everything that needs widgets (running a cell, saving) comes in through `INotebookHost`,
 * so this file only touches the notebook *model* and the comm.
 */
import type { INotebookModel } from '@jupyterlab/notebook';
import type { Kernel, KernelMessage } from '@jupyterlab/services';

import {
  BRIDGE_PROTOCOL_VERSION,
  BridgeAck,
  BridgeReply,
  BridgeRequest,
  CellInfo,
  CellType,
  DeleteCellParams,
  DeleteCellResponse,
  HelloResponse,
  InsertCellParams,
  InsertCellResponse,
  MAX_NOTEBOOK_THREADS,
  MoveCellParams,
  MoveCellResponse,
  OutputSummary,
  PageMethod,
  PageReply,
  Provenance,
  ReadNotebookParams,
  ReadNotebookResponse,
  ReplaceCellParams,
  ReplaceCellResponse,
  RunCellParams,
  RunCellResponse
} from './bridge_protocol';

export const METADATA_KEY = 'nbagent';

/** What the bridge needs from the notebook panel that it serves. */
export interface INotebookHost {
  readonly model: INotebookModel | null;
  readonly path: string;
  readonly appName: string;
  save(): Promise<void>;
  /** Execute a cell; resolves when it finished (or at once when `wait` is false). */
  runCell(cellId: string, wait: boolean): Promise<'ok' | 'error' | 'aborted' | 'queued'>;
}

/** A request that cannot be served; becomes an error reply with this code. */
export class BridgeFailure extends Error {
  constructor(
    readonly code: string,
    message: string
  ) {
    super(message);
  }
}

/** Serves one notebook's requests; one instance per notebook panel. */
export class NotebookBridgeModel {
  /**
   * Save the notebook after each write the kernel asks to save (the `autosave` setting).
   * Off by default: a write only marks the notebook dirty, so a save never lands under the
   * user's hands (JupyterLab's "File Changed" dialog on the user's next Ctrl+S).
   */
  autosave = false;

  /** This page's bridge: every page open on the notebook gets the kernel's messages, and
   * answers only those addressed to it (or to anyone). */
  readonly frontendId = `${Date.now().toString(36)}-${Math.random().toString(36).slice(2)}`;

  /** This browser tab, the same after a reload: a hello from it tells the kernel the page it
   * kept is gone (another tab's hello does not). */
  readonly tabId = browserTabId();

  constructor(
    readonly host: INotebookHost,
    readonly version: string
  ) {}

  /** Called once a kernel's comm serves this page (its hello, or this page's own): the page
   * may ask the kernel things from then on. */
  onAttach: (() => void) | null = null;

  private comm: Kernel.IComm | null = null;
  private asked = 0;
  private readonly answers = new Map<string, (reply: PageReply) => void>();

  /** Ask the kernel to act on a click (a badge's "Undo"); resolves with its answer, or says why
   * none came. Only through a comm the kernel opened, so only while nbagent runs in it. */
  askKernel(method: PageMethod, params: { [key: string]: any }, timeoutMs = 60000): Promise<PageReply> {
    const comm = this.comm;
    const page_id = `${this.frontendId}-${++this.asked}`;
    if (!comm || comm.isDisposed) {
      return Promise.resolve({ page_id, ok: false, message: 'the kernel has no nbagent agent talking to this notebook' });
    }
    return new Promise(resolve => {
      const timer = setTimeout(() => {
        this.answers.delete(page_id);
        resolve({ page_id, ok: false, message: `the kernel did not answer within ${timeoutMs / 1000} s (is it busy?)` });
      }, timeoutMs);
      this.answers.set(page_id, reply => {
        clearTimeout(timer);
        resolve(reply);
      });
      comm.send({ page_id, method, params } as any);
    });
  }

  /** A comm the kernel opened to this page: its open data is the kernel's hello. */
  attach(comm: Kernel.IComm, openMsg: KernelMessage.ICommOpenMsg | null): void {
    this.serve(comm, openMsg);
    this.onAttach?.();
  }

  /** Serve the requests of one kernel comm, and take the kernel's answers to this page's own.
   * A comm this page opened itself (`announce`) has no open message. */
  private serve(comm: Kernel.IComm, openMsg: KernelMessage.ICommOpenMsg | null): void {
    this.comm = comm;
    const respond = async (data: unknown) => {
      const answer = data as PageReply;
      if (answer && typeof answer.page_id === 'string') {
        const settle = this.answers.get(answer.page_id);
        this.answers.delete(answer.page_id);
        settle?.(answer);
        return; // the kernel's answer to a click (this page's, or another page's)
      }
      const request = data as BridgeRequest;
      if (request && request.to && request.to !== this.frontendId) {
        return; // the kernel talks to another page of this notebook
      }
      if (request && typeof request.id === 'string' && request.method !== 'hello' && !comm.isDisposed) {
        comm.send({ ack: request.id } as BridgeAck as any); // taken: before acting, so the kernel knows this page is here
      }
      const reply = await this.handle(request);
      if (!comm.isDisposed) {
        comm.send(reply as any);
      }
    };
    comm.onMsg = msg => respond(msg.content.data);
    if (openMsg) {
      void respond(openMsg.content.data);
    }
  }

  /** Say hello on a comm of this page's own: the kernel sends its requests here from now on
   * (after a reload its comm to the page before would lead nowhere). */
  announce(comm: Kernel.IComm): void {
    this.serve(comm, null);
    comm.open(this.hello() as any);
    this.onAttach?.();
  }

  /** One request in, one reply out; never throws. */
  async handle(request: BridgeRequest): Promise<BridgeReply> {
    const id = request && typeof request.id === 'string' ? request.id : '';
    try {
      const result = await this.dispatch(request);
      return { id, ok: true, result: result as any, error: null };
    } catch (e) {
      const code = e instanceof BridgeFailure ? e.code : 'internal';
      const message = e instanceof Error ? e.message : String(e);
      return { id, ok: false, result: null, error: { code, message } };
    }
  }

  private dispatch(request: BridgeRequest): Promise<unknown> | unknown {
    const params = (request && request.params) || {};
    switch (request?.method) {
      case 'hello':
        return this.hello();
      case 'read_notebook':
        return this.readNotebook(params as ReadNotebookParams);
      case 'insert_cell':
        return this.insertCell(params as InsertCellParams);
      case 'replace_cell':
        return this.replaceCell(params as ReplaceCellParams);
      case 'delete_cell':
        return this.deleteCell(params as DeleteCellParams);
      case 'move_cell':
        return this.moveCell(params as MoveCellParams);
      case 'run_cell':
        return this.runCell(params as RunCellParams);
      default:
        throw new BridgeFailure('bad_request', `unknown method ${JSON.stringify(request?.method)}`);
    }
  }

  hello(): HelloResponse {
    return {
      protocol_version: BRIDGE_PROTOCOL_VERSION,
      extension_version: this.version,
      app: this.host.appName,
      path: this.host.path,
      frontend_id: this.frontendId,
      tab_id: this.tabId
    };
  }

  readNotebook(params: ReadNotebookParams): ReadNotebookResponse {
    const model = this.requireModel();
    const includeOutputs = params.include_outputs ?? true;
    const max = params.max_output_chars ?? 2000;
    const cells: CellInfo[] = [];
    for (let index = 0; index < model.cells.length; index++) {
      const cell = model.cells.get(index);
      const json = cell.toJSON() as any;
      cells.push({
        id: cell.id,
        index,
        cell_type: cell.type as CellType,
        source: cell.sharedModel.getSource(),
        execution_count: cell.type === 'code' ? (json.execution_count ?? null) : null,
        outputs: includeOutputs && cell.type === 'code' ? summarizeOutputs(json.outputs ?? [], max) : [],
        provenance: readProvenance(cell.getMetadata(METADATA_KEY))
      });
    }
    return { path: this.host.path, cells, threads: this.threads().slice(-MAX_NOTEBOOK_THREADS) };
  }

  async insertCell(params: InsertCellParams): Promise<InsertCellResponse> {
    const model = this.requireModel();
    if (typeof params.source !== 'string') {
      throw new BridgeFailure('bad_request', 'insert_cell needs a string source');
    }
    const cellType: CellType = params.cell_type ?? 'code';
    if (!['code', 'markdown', 'raw'].includes(cellType)) {
      throw new BridgeFailure('bad_request', `unknown cell type ${JSON.stringify(cellType)}`);
    }
    let index = model.cells.length;
    if (params.after_cell_id) {
      index = this.indexOf(params.after_cell_id) + 1;
    } else if (params.index !== null && params.index !== undefined) {
      if (!Number.isInteger(params.index) || params.index < 0 || params.index > model.cells.length) {
        throw new BridgeFailure(
          'bad_request',
          `index ${params.index} is out of range 0..${model.cells.length}`
        );
      }
      index = params.index;
    }
    const metadata = untrusted(objectOrFail(params.metadata ?? {}, 'metadata'));
    if (params.provenance) {
      metadata[METADATA_KEY] = provenanceJSON(params.provenance);
    }
    const restored = cellType === 'code' ? restoredOutputs(params) : restoredAttachments(params);
    const shared = model.sharedModel.insertCell(index, {
      id: this.freeId(params.cell_id),
      cell_type: cellType,
      source: params.source,
      metadata,
      ...restored
    } as any);
    if (params.provenance) {
      this.addThread(params.provenance.thread_id);
    }
    await this.maybeSave(params.save);
    return { cell_id: shared.getId(), index };
  }

  async replaceCell(params: ReplaceCellParams): Promise<ReplaceCellResponse> {
    const model = this.requireModel();
    const index = this.indexOf(params.cell_id);
    const cell = model.cells.get(index);
    const oldSource = this.unchanged(params.cell_id, cell.sharedModel.getSource(), params.expected_source);
    const oldProvenance = readProvenance(cell.getMetadata(METADATA_KEY));
    // No await between the check and the write: no keystroke can land in between.
    cell.sharedModel.setSource(params.source ?? '');
    if (params.provenance) {
      cell.setMetadata(METADATA_KEY, provenanceJSON(params.provenance));
      this.addThread(params.provenance.thread_id);
    } else if (params.restore_provenance) {
      cell.deleteMetadata(METADATA_KEY); // an undo: the cell had no badge before the call undone
    }
    await this.maybeSave(params.save);
    return { cell_id: params.cell_id, index, old_source: oldSource, old_provenance: oldProvenance };
  }

  async deleteCell(params: DeleteCellParams): Promise<DeleteCellResponse> {
    const model = this.requireModel();
    const index = this.indexOf(params.cell_id);
    const oldSource = this.unchanged(params.cell_id, model.cells.get(index).sharedModel.getSource(), params.expected_source);
    const cellType = model.cells.get(index).type as CellType;
    const json = model.cells.get(index).toJSON() as any;
    model.sharedModel.deleteCell(index);
    await this.maybeSave(params.save);
    return {
      cell_id: params.cell_id,
      index,
      old_source: oldSource,
      cell_type: cellType,
      ...keptForUndo(json, params.max_outputs_chars ?? null),
      execution_count: Number.isInteger(json.execution_count) ? json.execution_count : null
    };
  }

  async moveCell(params: MoveCellParams): Promise<MoveCellResponse> {
    const model = this.requireModel();
    const from = this.indexOf(params.cell_id);
    const to = params.to_index;
    if (!Number.isInteger(to) || to < 0 || to >= model.cells.length) {
      throw new BridgeFailure('bad_request', `to_index ${to} is out of range 0..${model.cells.length - 1}`);
    }
    this.unchanged(params.cell_id, model.cells.get(from).sharedModel.getSource(), params.expected_source);
    if (from !== to) {
      model.sharedModel.moveCell(from, to);
    }
    await this.maybeSave(params.save);
    return { cell_id: params.cell_id, from_index: from, to_index: to };
  }

  async runCell(params: RunCellParams): Promise<RunCellResponse> {
    const model = this.requireModel();
    const wait = params.wait ?? true;
    this.indexOf(params.cell_id);
    const status = await this.host.runCell(params.cell_id, wait);
    // The cell may have been deleted while it ran: report what is left.
    const cell = findCell(model, params.cell_id);
    const json = (cell?.toJSON() ?? {}) as any;
    return {
      cell_id: params.cell_id,
      status,
      execution_count: json.execution_count ?? null,
      outputs: wait ? summarizeOutputs(json.outputs ?? [], params.max_output_chars ?? 2000) : []
    };
  }

  /** Thread ids recorded in `metadata.nbagent.threads`, oldest first. */
  threads(): string[] {
    const meta = this.host.model?.getMetadata(METADATA_KEY) as any;
    const threads = meta && Array.isArray(meta.threads) ? meta.threads : [];
    return threads.filter((t: unknown) => typeof t === 'string');
  }

  private addThread(threadId: string): void {
    const model = this.host.model;
    if (!model || !threadId || this.threads().includes(threadId)) {
      return;
    }
    const meta = { ...((model.getMetadata(METADATA_KEY) as any) ?? {}) };
    meta.threads = [...this.threads(), threadId];
    model.setMetadata(METADATA_KEY, meta);
  }

  private async maybeSave(save: boolean | undefined): Promise<void> {
    if (this.autosave && (save ?? true)) {
      await this.host.save();
    }
  }

  /** `live`, when it is what the kernel expects the cell to hold; else a `conflict`. */
  private unchanged(cellId: string, live: string, expected: string | null | undefined): string {
    if (typeof expected === 'string' && live !== expected) {
      throw new BridgeFailure(
        'conflict',
        `cell ${JSON.stringify(cellId)} was changed in the notebook after the agent last read it; nothing was written`
      );
    }
    return live;
  }

  private requireModel(): INotebookModel {
    const model = this.host.model;
    if (!model) {
      throw new BridgeFailure('no_notebook', 'the notebook is not loaded');
    }
    return model;
  }

  /** `cellId` when it is a valid cell id (nbformat 4.5) that no cell holds now, else none. */
  private freeId(cellId: string | null | undefined): string | undefined {
    const valid = typeof cellId === 'string' && /^[a-zA-Z0-9_-]{1,64}$/.test(cellId);
    return valid && !findCell(this.requireModel(), cellId) ? cellId : undefined;
  }

  private indexOf(cellId: string): number {
    const model = this.requireModel();
    for (let i = 0; i < model.cells.length; i++) {
      if (model.cells.get(i).id === cellId) {
        return i;
      }
    }
    throw new BridgeFailure('not_found', `no cell with id ${JSON.stringify(cellId)}`);
  }
}

/** What a deleted cell's undo needs, within `max` characters of JSON: its metadata (never
 * `trusted`) and attachments, each whole or named in `omitted`, then its outputs. */
export function keptForUndo(json: any, max: number | null): Partial<DeleteCellResponse> {
  const kept: Partial<DeleteCellResponse> = { omitted: [] };
  let left = max;
  for (const part of ['metadata', 'attachments'] as const) {
    const value = part === 'metadata' ? untrusted(json.metadata ?? {}) : json.attachments;
    const size = value ? JSON.stringify(value).length : 0;
    if (left !== null && size > left) {
      kept.omitted!.push(part);
    } else if (value) {
      kept[part] = value;
      left = left === null ? null : left - size;
    }
  }
  kept.outputs = cappedOutputs(Array.isArray(json.outputs) ? json.outputs : [], left);
  return kept;
}

/** A deleted cell's outputs in order while their JSON stays within `max` characters; each one
 * past it is sent as its size only, so a huge output never crosses the comm. */
export function cappedOutputs(outputs: any[], max: number | null): any[] {
  let used = 0;
  return outputs.map(out => {
    const size = JSON.stringify(out).length;
    if (max !== null && used + size > max) {
      return { output_type: 'omitted', chars: size };
    }
    used += size;
    return out;
  });
}

/** The outputs and execution count an undo puts back into a code cell, checked for shape (the
 * kernel sends them from its rollout); never `metadata.trusted`, so they come back untrusted. */
function restoredOutputs(params: InsertCellParams): { [key: string]: any } {
  const outputs = params.outputs ?? [];
  if (!Array.isArray(outputs) || !outputs.every(o => o && typeof o === 'object' && typeof o.output_type === 'string')) {
    throw new BridgeFailure('bad_request', 'insert_cell outputs must be a list of nbformat outputs');
  }
  const count = params.execution_count;
  return { outputs, execution_count: Number.isInteger(count) ? count : null };
}

/** A cell's metadata without `trusted`: a cell put back by an undo must not run its outputs' scripts. */
function untrusted(metadata: { [key: string]: any }): { [key: string]: any } {
  const { trusted: _trusted, ...rest } = metadata;
  return rest;
}

function objectOrFail(value: unknown, what: string): { [key: string]: any } {
  if (!value || typeof value !== 'object' || Array.isArray(value)) {
    throw new BridgeFailure('bad_request', `insert_cell ${what} must be an object`);
  }
  return value as { [key: string]: any };
}

/** The attachments an undo puts back into a markdown or raw cell: an object of mime bundles. */
function restoredAttachments(params: InsertCellParams): { [key: string]: any } {
  if (params.attachments === null || params.attachments === undefined) {
    return {};
  }
  const attachments = objectOrFail(params.attachments, 'attachments');
  if (!Object.values(attachments).every(b => b && typeof b === 'object' && !Array.isArray(b))) {
    throw new BridgeFailure('bad_request', 'insert_cell attachments must map names to mime bundles');
  }
  return { attachments };
}

/** A random id kept in this tab's session storage (a reload keeps it, a new tab gets its own). */
function browserTabId(): string {
  const key = 'nbagent-tab-id';
  const fresh = `${Date.now().toString(36)}-${Math.random().toString(36).slice(2)}`;
  try {
    const kept = window.sessionStorage.getItem(key);
    if (kept) {
      return kept;
    }
    window.sessionStorage.setItem(key, fresh);
  } catch {
    // no session storage (sandboxed frame): every page counts as its own tab
  }
  return fresh;
}

function findCell(model: INotebookModel, cellId: string) {
  for (let i = 0; i < model.cells.length; i++) {
    const cell = model.cells.get(i);
    if (cell.id === cellId) {
      return cell;
    }
  }
  return undefined;
}

function provenanceJSON(p: Provenance): { [key: string]: string } {
  return { thread_id: p.thread_id, turn_id: p.turn_id, call_id: p.call_id };
}

/** The provenance stored on a cell, when an agent call wrote it. */
export function readProvenance(value: unknown): Provenance | null {
  const v = value as any;
  if (v && typeof v === 'object' && typeof v.call_id === 'string') {
    return { thread_id: String(v.thread_id ?? ''), turn_id: String(v.turn_id ?? ''), call_id: v.call_id };
  }
  return null;
}

// eslint-disable-next-line no-control-regex
const ANSI = /\u001b\[[0-9;]*[A-Za-z]/g;

function joinText(value: unknown): string {
  return Array.isArray(value) ? value.join('') : typeof value === 'string' ? value : '';
}

/** Reduce nbformat outputs to text the model can read, each cut at `max` characters. */
export function summarizeOutputs(outputs: any[], max: number): OutputSummary[] {
  return outputs.map(out => {
    let text = '';
    let mimeTypes: string[] = [];
    switch (out.output_type) {
      case 'stream':
        text = joinText(out.text);
        break;
      case 'error':
        text = `${out.ename}: ${out.evalue}\n${(out.traceback ?? []).join('\n')}`.replace(ANSI, '');
        break;
      default: {
        const data = out.data ?? {};
        mimeTypes = Object.keys(data);
        text = joinText(data['text/plain']);
        if (!text && data['text/markdown']) {
          text = joinText(data['text/markdown']);
        }
      }
    }
    const truncated = text.length > max;
    return {
      output_type: String(out.output_type),
      text: truncated ? text.slice(0, max) : text,
      mime_types: mimeTypes,
      truncated
    };
  });
}

/** The form of the ids nbagent gives threads (`thread_` and 20 hex digits). */
export const THREAD_ID = /^thread_[0-9a-f]{20}$/;

/** Ids from notebook metadata (untrusted: anyone can write it) that are worth asking the
 * kernel about: well-formed thread ids only, no duplicates, oldest first, the latest
 * `MAX_NOTEBOOK_THREADS` of them. One pass whatever the number of ids. */
export function wellFormedThreadIds(ids: unknown[]): string[] {
  const out = new Set<string>();
  for (const id of ids) {
    if (typeof id === 'string' && THREAD_ID.test(id)) {
      out.add(id);
    }
  }
  return [...out].slice(-MAX_NOTEBOOK_THREADS);
}
