/**
 * Messages between the kernel and this extension over the `nbagent.bridge` comm.
 *
 * Mirrors `nbagent/protocol/bridge.py` name for name and field for field
 * (tests/bridge/test_protocol_mirror.py compares them). Fields stay snake_case: they are
 * the JSON on the wire. Change both files together.
 */

export const BRIDGE_PROTOCOL_VERSION = 4;

export const COMM_TARGET = 'nbagent.bridge';

/** How many of the thread ids in a notebook's `metadata.nbagent.threads` are considered: the
 * latest. Whoever sent the notebook wrote them, and each one offered costs a look-up. */
export const MAX_NOTEBOOK_THREADS = 100;

/** How many badged cells one `check_cells` asks about: the first ones when the page loads, the
 * rest when the pointer enters them. */
export const MAX_CHECKED_CELLS = 500;

export type BridgeMethod =
  | 'hello'
  | 'read_notebook'
  | 'insert_cell'
  | 'replace_cell'
  | 'delete_cell'
  | 'move_cell'
  | 'run_cell';

export type PageMethod = 'check_cell' | 'check_cells' | 'undo_cell';

export type CellType = 'code' | 'markdown' | 'raw';

/** Base of every bridge message; unknown fields are ignored on both sides. */
// eslint-disable-next-line @typescript-eslint/no-empty-interface
export interface BridgeMessage {}

/** Which agent call wrote a cell; stored as the cell's `metadata.nbagent`. */
export interface Provenance extends BridgeMessage {
  thread_id: string;
  turn_id: string;
  call_id: string;
}

/** Kernel -> extension. */
export interface BridgeRequest extends BridgeMessage {
  id: string;
  method: BridgeMethod;
  params?: { [key: string]: any };
  /** The `frontend_id` of the hello the kernel kept; only that page answers. */
  to?: string;
}

export interface BridgeErrorInfo extends BridgeMessage {
  code: string;
  message: string;
}

/** Extension -> kernel: exactly one per request. */
export interface BridgeReply extends BridgeMessage {
  id: string;
  ok: boolean;
  result?: { [key: string]: any } | null;
  error?: BridgeErrorInfo | null;
}

/** Extension -> kernel, at once, before acting on a request: a page that is gone sends none. */
export interface BridgeAck extends BridgeMessage {
  ack: string;
}

/** Extension -> kernel: what a person clicked; the kernel checks all of it. */
export interface PageRequest extends BridgeMessage {
  page_id: string;
  method: PageMethod;
  params?: { [key: string]: any };
}

/** Kernel -> extension: the answer to one `PageRequest`. */
export interface PageReply extends BridgeMessage {
  page_id: string;
  ok: boolean;
  message: string;
  /** `check_cells`: for each cell asked, in order, whether this kernel made that call. */
  confirmed?: boolean[] | null;
}

/** Undo the one cell change an agent call made (the badge's "Undo"). */
export interface UndoCellParams extends BridgeMessage {
  thread_id: string;
  turn_id: string;
  call_id: string;
}

/** `check_cell` for every badge the page shows on load (at most `MAX_CHECKED_CELLS`). */
export interface CheckCellsParams extends BridgeMessage {
  cells: Provenance[];
}

/** Sent as the comm's open data. */
export interface HelloParams extends BridgeMessage {
  protocol_version?: number;
  kernel_package_version?: string;
}

export interface HelloResponse extends BridgeMessage {
  protocol_version: number;
  extension_version?: string;
  app?: string;
  path?: string;
  /** This page's bridge, random per page. */
  frontend_id?: string;
  /** The browser tab, the same across reloads (session storage). */
  tab_id?: string;
}

export interface OutputSummary extends BridgeMessage {
  output_type: string;
  text?: string;
  mime_types?: string[];
  truncated?: boolean;
}

export interface CellInfo extends BridgeMessage {
  id: string;
  index: number;
  cell_type: CellType;
  source: string;
  execution_count?: number | null;
  outputs?: OutputSummary[];
  provenance?: Provenance | null;
}

export interface ReadNotebookParams extends BridgeMessage {
  include_outputs?: boolean;
  max_output_chars?: number;
}

export interface ReadNotebookResponse extends BridgeMessage {
  path: string;
  cells?: CellInfo[];
  threads?: string[];
}

export interface InsertCellParams extends BridgeMessage {
  source: string;
  cell_type?: CellType;
  index?: number | null;
  after_cell_id?: string | null;
  provenance?: Provenance | null;
  save?: boolean;
  /** A code cell's outputs (nbformat), when an undo puts back a deleted cell; they come back untrusted. */
  outputs?: { [key: string]: any }[];
  execution_count?: number | null;
  /** The id the cell takes when it is valid and free (an undo puts a deleted cell back as it was). */
  cell_id?: string | null;
  /** The cell's metadata (an undo's); `trusted` is never taken, `provenance` wins over its `nbagent`. */
  metadata?: { [key: string]: any };
  /** A markdown or raw cell's attachments (an undo's). */
  attachments?: { [key: string]: any } | null;
}

export interface InsertCellResponse extends BridgeMessage {
  cell_id: string;
  index: number;
}

export interface ReplaceCellParams extends BridgeMessage {
  cell_id: string;
  source: string;
  provenance?: Provenance | null;
  save?: boolean;
  /** Write only if the live source is exactly this, else answer `conflict`. */
  expected_source?: string | null;
  /** An undo: the provenance becomes `provenance` exactly, removed when it is null. */
  restore_provenance?: boolean;
}

export interface ReplaceCellResponse extends BridgeMessage {
  cell_id: string;
  index: number;
  old_source?: string;
  /** The cell's provenance before the write, which its undo puts back. */
  old_provenance?: Provenance | null;
}

export interface DeleteCellParams extends BridgeMessage {
  cell_id: string;
  expected_source?: string | null;
  save?: boolean;
  /** Metadata, attachments, then outputs, within this many characters of JSON: metadata or
   * attachments past it are named in `omitted`, an output is sent as `{output_type: 'omitted', chars}`. */
  max_outputs_chars?: number | null;
}

export interface DeleteCellResponse extends BridgeMessage {
  cell_id: string;
  index: number;
  old_source?: string;
  /** The deleted cell's type, so an undo puts back a markdown cell as markdown. */
  cell_type?: CellType;
  /** The deleted code cell's outputs (nbformat, cut as `max_outputs_chars` says), kept for undo. */
  outputs?: { [key: string]: any }[];
  execution_count?: number | null;
  /** The deleted cell's metadata but `trusted`, kept for undo. */
  metadata?: { [key: string]: any } | null;
  /** A deleted markdown or raw cell's attachments, kept for undo. */
  attachments?: { [key: string]: any } | null;
  /** What was not sent for being over `max_outputs_chars`. */
  omitted?: ('metadata' | 'attachments')[];
}

export interface MoveCellParams extends BridgeMessage {
  cell_id: string;
  /** The cell's position after the move (0 = first). */
  to_index: number;
  expected_source?: string | null;
  save?: boolean;
}

export interface MoveCellResponse extends BridgeMessage {
  cell_id: string;
  from_index: number;
  to_index: number;
}

export interface RunCellParams extends BridgeMessage {
  cell_id: string;
  wait?: boolean;
  max_output_chars?: number;
}

export interface RunCellResponse extends BridgeMessage {
  cell_id: string;
  status: 'ok' | 'error' | 'aborted' | 'queued';
  execution_count?: number | null;
  outputs?: OutputSummary[];
}
