// The one module that talks to Tauri. Everything else uses the `Backend` interface, so the UI also
// runs in a plain browser against `FakeBackend` (tests, and design work with `npm run dev`; the
// production bundle leaves the fake out).
import type {
  Drafters,
  ApiError, CardChart, CatalogView, Chart, Diagnosis, Mode, Settings, DownloadEvent, ExportSource, VocabGroup, HistoryEntry, HistoryRun, RunEvent, RunOutcome, RunRequest, SweepEntry, SweepOutcome,
  SweepRequest, SweepSpec, SweepUiEvent, SweepView, OpenedRun, EngineStatus, UnloadOutcome,
  ChatAnswer, ChatEntry, ChatEvent, ChatRequest, Conversation, ServerRequest, ServerStatus,
  TuneEvent, TuneRequest, TuneResult,
} from "./types";

export interface Backend {
  /// The doctor's verdict before loading, for the settings' context size, KV cache types, GPU
  /// layers, remote machines and split (the engine worker answers, as a run will count them).
  doctor(target: string, draft: string | null, settings: Settings): Promise<Diagnosis>;
  /// What the engine would refuse in these settings for runs in `modes` (empty: nothing).
  checkSettings(settings: Settings, modes: Mode[]): Promise<ApiError[]>;
  run(request: RunRequest, onEvent: (e: RunEvent) => void): Promise<RunOutcome>;
  cancel(): Promise<void>;
  historyList(): Promise<HistoryEntry[]>;
  historyGet(id: string): Promise<HistoryRun>;
  /// A saved run with its coloured tokens, verdict and charts, as it was shown.
  historyOpen(id: string): Promise<OpenedRun>;
  historyDelete(id: string): Promise<void>;
  /// What the engine process holds (models, resident memory) and whether it is busy.
  engineStatus(): Promise<EngineStatus>;
  /// Frees the warm models now (refused with `busy` while a run or sweep is in progress).
  unloadModels(): Promise<UnloadOutcome>;
  /// Warm models are unloaded after this many idle seconds (0: never).
  setUnloadAfter(seconds: number): Promise<void>;
  /// Calls back when the idle time unloaded the models; returns a function that stops it.
  onModelsUnloaded(handler: (o: UnloadOutcome) => void): Promise<() => void>;
  /// Asks the user for a file (a .gguf model or an n-gram map); null when they cancel.
  pickFile(title: string, kind: FileKind): Promise<string | null>;
  /// Asks the user for several .gguf files; empty when they cancel.
  pickModels(title: string): Promise<string[]>;
  sweep(request: SweepRequest, onEvent: (e: SweepUiEvent) => void): Promise<SweepOutcome>;
  sweepList(): Promise<SweepEntry[]>;
  /// How many cells the engine would measure for this spec, or the error the sweep would start with.
  sweepPlan(spec: SweepSpec): Promise<number>;
  sweepGet(id: string): Promise<SweepView>;
  /// Finds the fastest drafter for a target on this machine (every drafter on disk that fits, and
  /// auto, measured against the target alone); cancel() stops it, keeping what was measured.
  tune(request: TuneRequest, onEvent: (e: TuneEvent) => void): Promise<TuneResult>;
  /// The latest Find fastest of a target on this machine (null: never tuned here).
  tuned(target: string): Promise<TuneResult | null>;
  /// The latest Find fastest of every target tuned on this machine (the pickers' badges).
  tunedAll(): Promise<TuneResult[]>;
  /// Asks where to save the chart or result card (PNG or SVG) and saves it; false when the user cancels.
  saveChart(chart: Chart, name: string): Promise<boolean>;
  /// A result card's PNG bytes (at 2×), for the clipboard.
  cardPng(card: CardChart): Promise<ArrayBuffer>;
  /// Asks where to save a run's or sweep's results (CSV or JSON) and saves them; false on cancel.
  exportResults(source: ExportSource, name: string, format: "csv" | "json"): Promise<boolean>;
  /// GGUF files already on disk (Hugging Face cache, LM Studio, Ollama, `folders`), by vocabulary.
  modelsOnDisk(folders: string[]): Promise<VocabGroup[]>;
  /// Every way to draft for a target (a file or a catalog id), and what cannot with the reason.
  drafters(target: string, folders: string[]): Promise<Drafters>;
  catalog(): Promise<CatalogView>;
  /// Downloads into the Hugging Face cache (resuming a partial file); resolves to the model's path.
  download(repo: string, file: string, onEvent: (e: DownloadEvent) => void): Promise<string>;
  cancelDownload(repo: string, file: string): Promise<boolean>;
  /// Asks the user for a folder; null when they cancel.
  pickFolder(title: string): Promise<string | null>;
  /// Calls back with the paths of files dropped on the window; returns a function that stops it.
  onFileDrop(handler: (paths: string[]) => void): Promise<() => void>;
  /// The app menu's items the page acts on (macOS): `view:run`, `run:both`, `file:target`, …
  onMenu(handler: (id: string) => void): Promise<() => void>;
  /// Opens the Settings window (or brings it to the front).
  openSettings(): Promise<void>;
  /// Closes the window this page is in (the Settings window's Done).
  closeWindow(): Promise<void>;
  /// Tells every window of the app that the settings changed (the Settings window does).
  settingsChanged(): Promise<void>;
  /// Calls back when the Settings window changed them; returns a function that stops it.
  onSettingsChanged(handler: () => void): Promise<() => void>;
  /// The next answer of a conversation (the engine keeps the earlier turns in its caches).
  chatSend(request: ChatRequest, onEvent: (e: ChatEvent) => void): Promise<ChatAnswer>;
  /// Stops the answer being written (what it wrote so far is kept).
  chatStop(): Promise<void>;
  chatList(): Promise<ChatEntry[]>;
  chatGet(id: string): Promise<Conversation>;
  /// Saves a conversation (atomically); a new one gets its id.
  chatSave(conversation: Conversation): Promise<Conversation>;
  chatDelete(id: string): Promise<void>;
  /// Starts the local OpenAI-compatible server on 127.0.0.1 (a running one is stopped first).
  serverStart(request: ServerRequest): Promise<ServerStatus>;
  serverStop(): Promise<ServerStatus>;
  serverStatus(): Promise<ServerStatus>;
}

export type FileKind = "model" | "ngram_map";

const FILE_FILTERS: Record<FileKind, { name: string; extensions: string[] }[]> = {
  model: [{ name: "GGUF model", extensions: ["gguf"] }],
  ngram_map: [{ name: "N-gram map (draftlab ngram build)", extensions: ["dlngram"] }, { name: "All files", extensions: ["*"] }],
};

/// Milliseconds from the engine producing a frame's first token to the page receiving it.
export const tokenLatencies: number[] = [];
(globalThis as { __draftlabTokenLatencies?: number[] }).__draftlabTokenLatencies = tokenLatencies;

export function isTauri(): boolean {
  return typeof window !== "undefined" && "__TAURI_INTERNALS__" in window;
}

export async function tauriBackend(): Promise<Backend> {
  const { invoke, Channel } = await import("@tauri-apps/api/core");
  const { open } = await import("@tauri-apps/plugin-dialog");
  const { getCurrentWebview } = await import("@tauri-apps/api/webview");
  const { emit, listen } = await import("@tauri-apps/api/event");
  const { getCurrentWindow } = await import("@tauri-apps/api/window");
  return {
    doctor: (target, draft, settings) => invoke<Diagnosis>("doctor", { target, draft, settings }),
    checkSettings: (settings, modes) => invoke<ApiError[]>("check_settings", { settings, modes }),
    run: (request, onEvent) => {
      const channel = new Channel<RunEvent>();
      channel.onmessage = (e) => {
        // How long tokens take from the engine to this page (read by the end-to-end benchmark).
        if (e.type === "tokens") tokenLatencies.push(Date.now() - e.first_token_at_ms);
        onEvent(e);
      };
      return invoke<RunOutcome>("run", { request, onEvent: channel });
    },
    cancel: () => invoke<void>("cancel"),
    historyList: () => invoke<HistoryEntry[]>("history_list"),
    historyGet: (id) => invoke<HistoryRun>("history_get", { id }),
    historyOpen: (id) => invoke<OpenedRun>("history_open", { id }),
    historyDelete: (id) => invoke<void>("history_delete", { id }),
    engineStatus: () => invoke<EngineStatus>("engine_status"),
    unloadModels: () => invoke<UnloadOutcome>("unload_models"),
    setUnloadAfter: (seconds) => invoke<void>("set_unload_after", { seconds }),
    onModelsUnloaded: (handler) => listen<UnloadOutcome>("models-unloaded", (e) => handler(e.payload)),
    onMenu: (handler) => listen<string>("draftlab://menu", (e) => handler(e.payload)),
    openSettings: () => invoke<void>("open_settings"),
    closeWindow: () => getCurrentWindow().close(),
    settingsChanged: () => emit("draftlab://settings"),
    onSettingsChanged: (handler) => listen("draftlab://settings", () => handler()),
    pickFile: async (title, kind) => {
      const picked = await open({ title, multiple: false, directory: false, filters: FILE_FILTERS[kind] });
      return typeof picked === "string" ? picked : null;
    },
    pickModels: async (title) => {
      const picked = await open({ title, multiple: true, directory: false, filters: FILE_FILTERS.model });
      return Array.isArray(picked) ? picked : typeof picked === "string" ? [picked] : [];
    },
    sweep: (request, onEvent) => {
      const channel = new Channel<SweepUiEvent>();
      channel.onmessage = onEvent;
      return invoke<SweepOutcome>("sweep", { request, onEvent: channel });
    },
    sweepList: () => invoke<SweepEntry[]>("sweep_list"),
    sweepPlan: (spec) => invoke<number>("sweep_plan", { spec }),
    sweepGet: (id) => invoke<SweepView>("sweep_get", { id }),
    tune: (request, onEvent) => {
      const channel = new Channel<TuneEvent>();
      channel.onmessage = onEvent;
      return invoke<TuneResult>("tune", { request, onEvent: channel });
    },
    tuned: (target) => invoke<TuneResult | null>("tuned", { target }),
    tunedAll: () => invoke<TuneResult[]>("tuned_all"),
    // The save dialog runs in Rust: the page never names a path that is written.
    saveChart: async (chart, name) => (await invoke<string | null>("save_chart", { chart, name })) !== null,
    cardPng: (card) => invoke<ArrayBuffer>("card_png", { card }),
    exportResults: async (source, name, format) =>
      (await invoke<string | null>("export_results", { source, name, format })) !== null,
    modelsOnDisk: (folders) => invoke<VocabGroup[]>("models_on_disk", { folders }),
    drafters: (target, folders) => invoke<Drafters>("drafters", { target, folders }),
    catalog: () => invoke<CatalogView>("catalog"),
    download: (repo, file, onEvent) => {
      const channel = new Channel<DownloadEvent>();
      channel.onmessage = onEvent;
      return invoke<string>("download", { repo, file, onEvent: channel });
    },
    cancelDownload: (repo, file) => invoke<boolean>("cancel_download", { repo, file }),
    pickFolder: async (title) => {
      const picked = await open({ title, multiple: false, directory: true });
      return typeof picked === "string" ? picked : null;
    },
    onFileDrop: async (handler) =>
      getCurrentWebview().onDragDropEvent((e) => {
        if (e.payload.type === "drop") handler(e.payload.paths);
      }),
    chatSend: (request, onEvent) => {
      const channel = new Channel<ChatEvent>();
      channel.onmessage = onEvent;
      return invoke<ChatAnswer>("chat_send", { request, onEvent: channel });
    },
    chatStop: () => invoke<void>("chat_stop"),
    chatList: () => invoke<ChatEntry[]>("chat_list"),
    chatGet: (id) => invoke<Conversation>("chat_get", { id }),
    chatSave: (conversation) => invoke<Conversation>("chat_save", { conversation }),
    chatDelete: (id) => invoke<void>("chat_delete", { id }),
    serverStart: (request) => invoke<ServerStatus>("server_start", { request }),
    serverStop: () => invoke<ServerStatus>("server_stop"),
    serverStatus: () => invoke<ServerStatus>("server_status"),
  };
}
