// A backend without Tauri: canned models and a simulated generation, for UI tests and for working
// on the UI in a plain browser. It follows the same event order as the real one.
import type { Backend, FileKind } from "./backend";
import type { ApiError, CatalogView, DownloadEvent, Drafters, ErrorCode, Settings, VocabGroup } from "./types";
import type { EngineStatus, OpenedRun, UnloadOutcome } from "./types";
import type { ChatAnswer, ChatEntry, ChatEvent, ChatRequest, Conversation, ServerRequest, ServerStatus } from "./types";
import type { Candidate, TuneEvent, TuneRequest, TuneResult, TuneRow } from "./types";
import type { CardChart, Chart, ExportSource, SweepEntry, SweepOutcome, SweepRequest, SweepSpec, SweepUiEvent, SweepView } from "./types";
import type { Diagnosis, HistoryEntry, MachineInfo, ModelSummary, HistoryRun, LiveStats, Mode, Report, RunEvent, RunOutcome, RunRequest, TokenView } from "./types";

const MACHINE: MachineInfo = {
  cpu: "fake CPU", arch: "aarch64", physical_cores: 8, logical_cores: 8, memory_total: 16e9, memory_available: 8e9,
  os: "macOS", gpu_backend: "Metal",
};

/// The fake engine's sweep: every target with every draft at every length (the draft strategy).
function fakeCells(spec: SweepSpec) {
  return spec.targets.flatMap((_, t) => spec.drafts.flatMap((_, d) => spec.n_drafts.map((k) => ({ target: t, draft: d as number | null, strategy: "draft" as const, n_draft: k, variant: 0 }))));
}

function summary(path: string, n_params: number, quantization: string): ModelSummary {
  return {
    path, file_size: n_params / 2, gguf_version: 3, name: path, architecture: "qwen2", n_params, quantization,
    context_length: 32768, n_layer: 28, n_embd: 1536, n_head: 12, n_head_kv: 2, kv_bytes_per_token: 28672,
    n_tensors: 338, has_chat_template: true, mtp_layers: null, drafter: null,
    vocab: { tokenizer_model: "gpt2", vocab_type: "BPE", size: 151936, bos_id: 151643, eos_id: 151645, add_bos: false, add_eos: false, fingerprint: /smol/i.test(path) ? "smol" : "qwen" },
  };
}

const WORDS = "def fib(n):\n    if n < 2:\n        return n\n    return fib(n - 1) + fib(n - 2)\n".match(/\s*\S+|\s+/g) ?? [];

export interface FakeOptions {
  /// Milliseconds between simulated frames (0: as fast as possible).
  frameMs?: number;
  /// Make the speculative run diverge at this token.
  divergeAt?: number;
  /// Fail this mode with this error code.
  failMode?: Mode;
  failCode?: ErrorCode;
  /// What `checkSettings` answers (the rules themselves are the engine's, in Rust).
  settingsProblems?: ApiError[];
}

export class FakeBackend implements Backend {
  cancelled = false;
  runs: RunRequest[] = [];
  saved: HistoryRun[] = [];
  loaded: string | null = null;
  unloadAfter = 300;
  unloadedHandler: ((o: UnloadOutcome) => void) | null = null;
  dropHandler: ((paths: string[]) => void) | null = null;

  constructor(private options: FakeOptions = {}) {}

  async doctor(target: string, draft: string | null, settings: Settings): Promise<Diagnosis> {
    const ctx = settings.n_ctx;
    const cross = draft !== null && /smol/i.test(draft) !== /smol/i.test(target);
    return {
      verdict: cross ? "warning" : "ok",
      findings: cross ? [{ level: "warning", topic: "vocabulary", message: "cross-vocabulary: token 5 differs. The draft drafts through text" }] : [],
      pairing: draft === null ? null : cross ? "cross-vocabulary" : "same-vocabulary",
      memory: {
        context: ctx, target_weights: 1.5e9, target_kv: 1e8, draft_weights: draft ? 3e8 : 0, draft_kv: draft ? 5e7 : 0,
        overhead: 5e7, needed: 2e9, gpu_needed: 2e9, available: 8e9, total: 16e9, gpu_budget: null,
        limit: 8e9, limit_reason: "memory free now (7.5 GiB of 14.9 GiB)", verdict: "fits",
      },
      target: summary(target, 1.5e9, "Q4_K_M"),
      draft: draft ? summary(draft, 0.5e9, "Q8_0") : null,
    };
  }

  async checkSettings(_settings: Settings, _modes: Mode[]): Promise<ApiError[]> {
    return this.options.settingsProblems ?? [];
  }

  async run(request: RunRequest, onEvent: (e: RunEvent) => void): Promise<RunOutcome> {
    this.runs.push(request);
    this.cancelled = false;
    const reports: Report[] = [];
    const shown: { mode: Mode; tokens: TokenView[] }[] = [];
    for (const mode of request.modes) {
      onEvent({ type: "loading", mode });
      const model = { path: request.target, name: "fake", architecture: "qwen2", quantization: "Q4_K_M", n_params: 1, file_size: 1, mtime: 0 };
      onEvent({ type: "loaded", mode, target: model, draft: null, load_ms: 5, warm: false });
      if (this.options.failMode === mode) {
        onEvent({ type: "failed", mode, error: { code: this.options.failCode ?? "worker_died", message: "the engine process stopped unexpectedly", hint: "A fresh engine starts with the next run." } });
        if (reports.length === 0) throw { code: this.options.failCode ?? "worker_died", message: "failed", hint: "" };
        break;
      }
      const tokens: TokenView[] = [];
      const n = Math.min(request.settings.n_predict, WORDS.length);
      const stats: LiveStats = { tokens: 0, elapsed_ms: 0, tokens_per_s: 0, steps: 0, drafted: 0, accepted: 0, acceptance_rate: 0, mean_accepted_len: 0, draft_ms: 0, verify_ms: 0, steady_steps: 0, steady_ms: 0 };
      for (let i = 0; i < n && !this.cancelled; i++) {
        let text = WORDS[i] ?? "";
        if (mode === "speculative" && this.options.divergeAt !== undefined && i >= this.options.divergeAt) text = " other";
        const draft = mode === "speculative" && i % 3 !== 0;
        const t: TokenView = { text, source: draft ? "draft" : "target", step: Math.floor(i / 3) };
        if (draft) t.strategy = "draft";
        tokens.push(t);
        stats.tokens = i + 1;
        stats.steps = Math.floor(i / 3) + 1;
        if (mode === "speculative") {
          stats.drafted += draft ? 1 : 0;
          stats.accepted += draft ? 1 : 0;
          stats.acceptance_rate = stats.drafted ? stats.accepted / stats.drafted : 0;
          stats.mean_accepted_len = stats.accepted / stats.steps;
        }
        // The target alone writes a token each 10 ms; the drafted run three each 20 ms (1.5×).
        stats.elapsed_ms = mode === "speculative" ? 20 * (Math.floor(i / 3) + 1) : 10 * (i + 1);
        stats.tokens_per_s = (stats.tokens * 1000) / stats.elapsed_ms;
        onEvent({ type: "tokens", mode, tokens: [t], stats: { ...stats }, first_token_at_ms: Date.now() });
        if (this.options.frameMs) await new Promise((r) => setTimeout(r, this.options.frameMs));
      }
      const report = {
        mode, strategy: mode === "speculative" ? "draft" : null, prompt_tokens: 10, prompt_ms: 5, prompt_reused: 0, target_alone_tps: null,
        generated_tokens: tokens.length, wall_ms: stats.elapsed_ms, generation_ms: stats.elapsed_ms,
        tokens_per_s: mode === "speculative" ? 150 : 100, target_passes: stats.steps, drafted: stats.drafted,
        accepted: stats.accepted, acceptance_rate: stats.acceptance_rate, mean_accepted_len: stats.mean_accepted_len,
        forced_drafted: 0, forced_accepted: 0, draft_ms: 1, verify_ms: 2, stop_reason: this.cancelled ? "cancelled" : "max_tokens",
        text: tokens.map((t) => t.text).join(""), tokens: tokens.map((_, i) => i), sources: tokens.map((t) => t.source),
        by_strategy: [], rounds: [], notes: [], target: model, draft: null,
        e2e_tokens_per_s: 90, tokens_per_pass: stats.steps ? tokens.length / stats.steps : 0, draft_decoded_tokens: 0, translate_ms: 0,
        drafted_by_position: [], accepted_by_position: [], draft_len_histogram: [], accepted_len_histogram: [],
        token_ms: tokens.map((_, i) => (mode === "speculative" ? 20 * Math.floor(i / 3) : i * 10)), margins: tokens.map(() => 5),
        settings: request.settings, machine: MACHINE, started_at: 1700000000,
        runtime: { backend: "Metal", device: "Apple M3", gpu_memory: 11.4e9, threads: 8,
          target: { requested: "all", offloaded: 29, layers: 29 }, draft: null },
      } satisfies Report;
      onEvent({ type: "done", mode, report });
      shown.push({ mode, tokens });
      this.loaded = request.target;
      if (request.charts !== false) {
        const series = reports.concat(report).map((r) => ({ label: r.mode, points: r.token_ms.map((t, i) => [t / 1000, i] as [number, number]) }));
        onEvent({ type: "charts", charts: [{ chart: { kind: "timeline", title: "Tokens/s over the run", series }, svg: `<svg data-kind="timeline"><text>${mode}</text></svg>` }] });
      }
      reports.push(report);
      if (this.cancelled) break;
    }
    const [b, s] = reports;
    if (b && s) {
      const d = this.options.divergeAt;
      const divergence = d === undefined ? null : { position: d, baseline_token: 1, speculative_token: 2, baseline_margin: 3.2, speculative_margin: 3.0, near_tie: false, common_text_len: 10 };
      const comparison = { identical: d === undefined, compared: b.tokens.length, baseline_tokens: b.tokens.length, speculative_tokens: s.tokens.length, divergence, sampled_at: null };
      const verdict = d === undefined ? `identical: ${b.tokens.length} tokens match the target alone` : `diverged at token ${d}`;
      onEvent({ type: "compared", comparison, verdict, speedup: s.tokens_per_s / b.tokens_per_s });
    }
    const id = `${1700000000 + this.saved.length}-000000000`;
    this.saved.push({ id, saved_at: 1700000000, request, reports, comparison: null, speedup: null, tokens: shown });
    return { history_id: id, cancelled: this.cancelled };
  }

  async cancel(): Promise<void> {
    this.cancelled = true;
  }

  async historyList(): Promise<HistoryEntry[]> {
    return this.saved.map((r) => ({
      id: r.id, saved_at: r.saved_at, target: r.request.target, draft: r.request.draft, prompt: r.request.prompt,
      modes: r.reports.map((x) => x.mode), speedup: r.speedup, identical: null, tokens_per_s: r.reports.map((x) => x.tokens_per_s),
      tokens: Math.min(...r.reports.map((x) => x.generated_tokens)),
    })).reverse();
  }

  async historyGet(id: string): Promise<HistoryRun> {
    const r = this.saved.find((x) => x.id === id);
    if (!r) throw { code: "not_found", message: `no saved run ${id}`, hint: "Pick a run from the history list." };
    return r;
  }

  async historyOpen(id: string): Promise<OpenedRun> {
    const run = await this.historyGet(id);
    const series = run.reports.map((r) => ({ label: r.mode, points: r.token_ms.map((t, i) => [t / 1000, i] as [number, number]) }));
    return { run, verdict: run.reports.length === 2 ? "identical" : null, charts: [{ chart: { kind: "timeline", title: "Tokens/s over the run", series }, svg: `<svg data-kind="timeline"></svg>` }] };
  }

  async historyDelete(id: string): Promise<void> {
    await this.historyGet(id);
    this.saved = this.saved.filter((r) => r.id !== id);
  }

  async engineStatus(): Promise<EngineStatus> {
    const loaded = this.loaded ? { target: this.loaded, draft: null, device: "Metal · Apple M3 · recommended working set 10.7 GiB · 29/29 layers on the GPU" } : null;
    return { running: this.loaded !== null, busy: false, loaded, idle_s: 1, rss_bytes: loaded ? 2e9 : 5e7, unload_after_s: this.unloadAfter };
  }

  async unloadModels(): Promise<UnloadOutcome> {
    const had = this.loaded !== null;
    this.loaded = null;
    return { reason: "asked", had_models: had, rss_before: had ? 2e9 : 5e7, rss_after: 5e7 };
  }

  async setUnloadAfter(seconds: number): Promise<void> {
    this.unloadAfter = seconds;
  }

  async onModelsUnloaded(handler: (o: UnloadOutcome) => void): Promise<() => void> {
    this.unloadedHandler = handler;
    return () => { this.unloadedHandler = null; };
  }

  async pickFile(_title: string, kind: FileKind): Promise<string | null> {
    return kind === "model" ? "/models/picked.gguf" : "/maps/picked.dlngram";
  }

  async pickModels(): Promise<string[]> {
    return ["/models/a.gguf", "/models/b.gguf"];
  }

  sweeps: SweepView[] = [];
  savedCharts: { chart: Chart; name: string }[] = [];
  exports: { source: ExportSource; name: string; format: string }[] = [];

  async sweep(request: SweepRequest, onEvent: (e: SweepUiEvent) => void): Promise<SweepOutcome> {
    const spec = request.spec ?? this.sweeps.find((x) => x.id === request.resume)?.results.spec;
    if (!spec) throw { code: "not_found", message: "no saved sweep", hint: "Pick a sweep from the list." };
    const id = request.resume ?? `${1700000000 + this.sweeps.length}-000000000`;
    const cells = fakeCells(spec);
    this.cancelled = false;
    onEvent({ type: "started", id, total: cells.length, spec });
    let done = 0;
    for (const key of cells) {
      if (this.cancelled) break;
      onEvent({ type: "engine", event: { type: "cell", key, label: `cell ${done + 1}` } });
      const m = 1 + key.n_draft / 10;
      const sp = { median: m, min: m - 0.05, max: m + 0.05 };
      const record = { key, outcome: { state: "measured" as const, baseline: sp, speculative: sp, speedup: sp, acceptance_rate: 0.6, mean_accepted_len: 1.5, identical: true, cross_vocabulary: false }, predicted_speedup: m + 0.02, seconds: 1, llama_cpp: null };
      done += 1;
      onEvent({ type: "engine", event: { type: "progress", done, total: cells.length, eta_s: cells.length - done, record } });
      onEvent({
        type: "charts",
        charts: [{ chart: { kind: "heatmap", title: "Speedup", rows: [], cols: [], cells: [] }, svg: `<svg data-kind="heatmap"><text>${done} cells</text></svg>` }],
        recommendations: [{ target: "a", best: key, speedup: m, advice: `a with b (k=${key.n_draft}): ${m.toFixed(2)}×`, llama_cpp: "llama-server -m a.gguf -md b.gguf" }],
      });
      if (this.options.frameMs) await new Promise((r) => setTimeout(r, this.options.frameMs));
    }
    const complete = done === cells.length;
    onEvent({ type: "finished", complete });
    return { id, complete };
  }

  tunes: TuneRequest[] = [];
  tunedResults: Record<string, TuneResult> = {};

  /// The fake engine's tune: the n-gram strategies and auto, ngram-mod fastest; a draft model
  /// (when the target has one in `drafterLists`) slower.
  async tune(request: TuneRequest, onEvent: (e: TuneEvent) => void): Promise<TuneResult> {
    this.tunes.push(request);
    this.cancelled = false;
    const ways = (await this.drafters(request.target)).ways.filter((w) => w.path !== null || w.kind === "ngram");
    const candidates: Candidate[] = [
      ...ways.map((w) => ({ label: w.kind === "ngram" ? w.strategy : `${w.label} · ${w.name}`, strategy: w.strategy as Candidate["strategy"], draft: w.path, kind: w.kind, memory: w.needed })),
      { label: "auto", strategy: "auto", draft: null, kind: "ngram", memory: 1e9 },
    ];
    const total = candidates.length * (1 + request.reps) + 1;
    onEvent({ type: "planned", candidates, dropped: [], runs: total });
    onEvent({ type: "loading", draft: null });
    const speed: Record<string, [number, number, number]> = { "ngram-mod": [1.42, 1.31, 1.55], auto: [1.36, 1.25, 1.44], lookup: [1.05, 0.97, 1.12], "ngram-cache": [1.02, 0.95, 1.08], draft: [0.71, 0.66, 0.75] };
    const rows: TuneRow[] = [];
    let done = 0;
    for (const c of candidates) {
      for (let i = 0; i <= request.reps; i++) {
        if (this.cancelled) return this.tuneResult(request, rows, false);
        onEvent({ type: "progress", done: done, total, eta_s: (total - done) * 2, label: `code: ${c.label}` });
        done++;
        if (this.options.frameMs) await new Promise((r) => setTimeout(r, this.options.frameMs));
      }
      const [median, min, max] = speed[c.strategy] ?? [1.0, 0.96, 1.04];
      const verdict = min > 1 ? "faster" : max < 1 ? "slower" : "within_noise";
      const row: TuneRow = {
        candidate: c, predicted: median * 0.95, speedup: { median, min, max }, verdict, baseline_tps: { median: 20, min: 19, max: 21 },
        speculative_tps: { median: 20 * median, min: 20 * min, max: 20 * max }, drafted: 120, acceptance: 0.62, identical: true,
        llama_cpp: c.strategy === "auto" ? null : `llama-server -m ${request.target} --spec-type ${c.strategy === "draft" ? "draft-simple" : c.strategy}`,
      };
      rows.push(row);
      onEvent({ type: "measured", row });
    }
    rows.sort((a, b) => b.speedup.median - a.speedup.median);
    return this.tuneResult(request, rows, true);
  }

  private tuneResult(request: TuneRequest, rows: TuneRow[], complete: boolean): TuneResult {
    const result: TuneResult = {
      target: request.target, target_name: request.target.split("/").pop() ?? request.target, machine: MACHINE, kinds: request.kinds,
      reps: request.reps, rows, dropped: [{ label: "draft model · big.gguf", reason: "does not fit in memory: needs 90 GiB", download: null }],
      started_at: 1795900000, seconds: 42, complete,
    };
    if (complete) this.tunedResults[request.target] = result;
    return result;
  }

  async tuned(target: string): Promise<TuneResult | null> {
    return this.tunedResults[target] ?? null;
  }

  async tunedAll(): Promise<TuneResult[]> {
    return Object.values(this.tunedResults);
  }

  async sweepPlan(spec: SweepSpec): Promise<number> {
    if (spec.targets.length === 0) throw { code: "invalid_settings", message: "targets is empty, but a sweep needs at least one target", hint: "Fix the setting and try again.", setting: "targets", reason: "is empty, but a sweep needs at least one target" };
    return fakeCells(spec).length;
  }

  async sweepList(): Promise<SweepEntry[]> {
    return this.sweeps.map((v) => ({ id: v.id, updated_at: v.results.updated_at, targets: v.results.spec.targets, drafts: v.results.spec.drafts, done: v.results.cells.length, total: 1, complete: v.results.complete }));
  }

  async sweepGet(id: string): Promise<SweepView> {
    const v = this.sweeps.find((x) => x.id === id);
    if (!v) throw { code: "not_found", message: `no saved sweep ${id}`, hint: "Pick a sweep from the list." };
    return v;
  }

  async cardPng(_card: CardChart): Promise<ArrayBuffer> {
    return new Uint8Array([0x89, 0x50, 0x4e, 0x47]).buffer;
  }

  async saveChart(chart: Chart, name: string): Promise<boolean> {
    this.savedCharts.push({ chart, name });
    return true;
  }

  async exportResults(source: ExportSource, name: string, format: "csv" | "json"): Promise<boolean> {
    this.exports.push({ source, name, format });
    return true;
  }

  disk: VocabGroup[] = [];
  catalogView: CatalogView = { models: [], limit: 16e9, limit_reason: "memory free now (14.9 GiB of 16 GiB)", context: 4096 };
  downloads: string[] = [];

  async modelsOnDisk(): Promise<VocabGroup[]> {
    return this.disk;
  }

  async catalog(): Promise<CatalogView> {
    return this.catalogView;
  }

  /// What `drafters` answers for each target (nothing known: the n-gram strategies only).
  drafterLists: Record<string, Drafters> = {};

  async drafters(target: string): Promise<Drafters> {
    const ngram = (s: string) => ({ kind: "ngram" as const, label: "n-gram", strategy: s, name: s, path: null, source: "built in", catalog_id: null, download: 0, needed: 1e9, memory: "fits" as const, cost: 0, cost_measured: false, note: "no file" });
    return this.drafterLists[target] ?? { target, ways: ["lookup", "ngram-cache", "ngram-mod"].map(ngram), refused: [], summary: `nothing on disk or in the catalog drafts for ${target}` };
  }

  async download(repo: string, file: string, onEvent: (e: DownloadEvent) => void): Promise<string> {
    this.downloads.push(`${repo}/${file}`);
    this.cancelled = false;
    const total = 1000;
    onEvent({ type: "started", repo, file, total, resumed_from: 0 });
    for (let d = 250; d <= total; d += 250) {
      if (this.cancelled) throw { code: "cancelled", message: `${file}: download cancelled`, hint: "Run the download again to resume where it stopped." };
      onEvent({ type: "progress", downloaded: d, total, bytes_per_s: 100, eta_s: (total - d) / 100 });
      if (this.options.frameMs) await new Promise((r) => setTimeout(r, this.options.frameMs));
    }
    onEvent({ type: "verifying" });
    const path = `/hf/models--${repo.replace("/", "--")}/snapshots/abc/${file}`;
    onEvent({ type: "done", path, already: false });
    return path;
  }

  async cancelDownload(): Promise<boolean> {
    this.cancelled = true;
    return true;
  }

  async pickFolder(): Promise<string | null> {
    return "/models/more";
  }

  /// The menu (tests call `menu(id)` as the app menu would).
  menuHandlers: ((id: string) => void)[] = [];

  async onMenu(handler: (id: string) => void): Promise<() => void> {
    this.menuHandlers.push(handler);
    return () => (this.menuHandlers = this.menuHandlers.filter((h) => h !== handler));
  }

  /// The Settings window: in a browser, the same page at #settings in a window of its own.
  settingsOpened = 0;
  async openSettings(): Promise<void> {
    this.settingsOpened += 1;
    globalThis.open?.("#settings", "draftlab-settings", "width=460,height=300");
  }

  async closeWindow(): Promise<void> {
    globalThis.close?.();
  }

  settingsHandlers: (() => void)[] = [];
  async settingsChanged(): Promise<void> {
    for (const h of this.settingsHandlers) h();
  }

  async onSettingsChanged(handler: () => void): Promise<() => void> {
    this.settingsHandlers.push(handler);
    return () => (this.settingsHandlers = this.settingsHandlers.filter((h) => h !== handler));
  }

  async onFileDrop(handler: (paths: string[]) => void): Promise<() => void> {
    this.dropHandler = handler;
    return () => (this.dropHandler = null);
  }

  chats: Conversation[] = [];
  chatRequests: ChatRequest[] = [];
  /// Prompt tokens the fake engine "holds" from the last answer (to report what a turn reuses).
  cachedPrompt = 0;

  async chatSend(request: ChatRequest, onEvent: (e: ChatEvent) => void): Promise<ChatAnswer> {
    this.chatRequests.push(request);
    this.cancelled = false;
    const prompt = request.messages.reduce((n, m) => n + m.content.length, 0);
    if (!request.open_ended && prompt + request.settings.n_predict > request.settings.n_ctx) {
      throw { code: "context_too_long", message: `this model's context holds ${request.settings.n_ctx} tokens, but the request needs ${prompt + request.settings.n_predict}`, hint: "Shorten the conversation (drop its oldest turns), ask for a shorter answer, or raise the context size." };
    }
    onEvent({ type: "loaded", target: { path: request.target, name: request.target, architecture: "qwen2", quantization: "Q4_K_M", n_params: 1, file_size: 1, mtime: 0 }, draft: null, load_ms: 0, warm: this.cachedPrompt > 0 });
    const reused = Math.min(this.cachedPrompt, prompt);
    onEvent({ type: "started", prompt_tokens: prompt, reused_tokens: reused, prompt_ms: 2 * (prompt - reused), target_alone_tps: 20, thinking: false });
    const words = ["Sure", ",", " here", " it", " is", "."];
    const tokens: TokenView[] = [];
    for (let i = 0; i < Math.min(words.length, request.settings.n_predict); i++) {
      if (this.cancelled) break;
      const t: TokenView = { text: words[i] ?? "", source: i % 2 ? "draft" : "target", step: i };
      tokens.push(t);
      onEvent({ type: "tokens", tokens: [t], stats: { tokens: i + 1, elapsed_ms: 10 * (i + 1), tokens_per_s: 30, steps: i + 1, drafted: i + 1, accepted: Math.ceil(i / 2), acceptance_rate: 0.5, mean_accepted_len: 0.5, draft_ms: 0, verify_ms: 5, steady_steps: 0, steady_ms: 0 } });
      if (this.options.frameMs) await new Promise((r) => setTimeout(r, this.options.frameMs));
    }
    const text = tokens.map((t) => t.text).join("");
    this.cachedPrompt = prompt + text.length;
    const stats = {
      strategy: request.mode === "speculative" ? request.settings.strategy : null, tokens: tokens.length, tokens_per_s: 30,
      drafted: tokens.length, accepted: Math.floor(tokens.length / 2), acceptance_rate: 0.5, target_alone_tps: 20,
      prompt_tokens: prompt, prompt_reused: reused, prompt_ms: 2 * (prompt - reused),
      stop_reason: this.cancelled ? ("cancelled" as const) : ("end_of_generation" as const),
    };
    // With tools, the fake model calls the first one, then answers from its result.
    const tools = request.tools.trim() ? (JSON.parse(request.tools) as { function?: { name: string }; name?: string }[]) : [];
    const first = tools[0]?.function?.name ?? tools[0]?.name;
    if (first && request.messages.at(-1)?.role !== "tool") {
      const arguments_ = JSON.stringify({ city: "Paris" });
      return { report: { text } as Report, tokens, stats, content: "", tool_calls: [{ id: `call_${this.chatRequests.length}`, name: first, arguments: arguments_ }] };
    }
    return { report: { text } as Report, tokens, stats, content: text, tool_calls: [] };
  }

  async chatStop(): Promise<void> {
    this.cancelled = true;
  }

  async chatList(): Promise<ChatEntry[]> {
    return this.chats.map((c) => ({ id: c.id, title: c.title, updated_at: c.updated_at, turns: c.turns.length, target: c.target })).reverse();
  }

  async chatGet(id: string): Promise<Conversation> {
    const c = this.chats.find((x) => x.id === id);
    if (!c) throw { code: "not_found", message: `no saved conversation ${id}`, hint: "Pick a conversation from the list." };
    return structuredClone(c);
  }

  async chatSave(conversation: Conversation): Promise<Conversation> {
    const c = structuredClone(conversation);
    if (!c.id) c.id = `${1700000000 + this.chats.length}-000000000`;
    if (!c.title) c.title = c.turns.find((t) => t.role === "user")?.content.slice(0, 60) ?? "New chat";
    c.updated_at = 1700000000 + this.chats.length;
    this.chats = this.chats.filter((x) => x.id !== c.id).concat(c);
    return structuredClone(c);
  }

  async chatDelete(id: string): Promise<void> {
    await this.chatGet(id);
    this.chats = this.chats.filter((c) => c.id !== id);
  }

  server: ServerRequest | null = null;

  private status(): ServerStatus {
    const r = this.server;
    return {
      running: r !== null, url: r ? `http://127.0.0.1:${r.port}/v1` : null, model: r ? r.target.replace(/^.*\//, "").replace(/\.gguf$/, "") : null,
      target: r?.target ?? null, draft: r?.draft ?? null, strategy: r?.settings.strategy ?? null, adaptive: r?.settings.adaptive ?? false,
      api_key: !!r?.api_key, served: r ? 2 : 0, cancelled: 0, refused_busy: 0,
      requests: r ? [
        { id: "msg_2", at_ms: 1700000060000, api: "messages", prompt_tokens: 3120, prompt_reused: 2980, tokens: 212, tokens_per_s: 31.4, target_alone_tps: 20.1, strategy: "auto", drafted: 180, accepted: 141, wall_ms: 7400, finish: "tool_calls" },
        { id: "msg_1", at_ms: 1700000000000, api: "messages", prompt_tokens: 2980, prompt_reused: 0, tokens: 48, tokens_per_s: 19.8, target_alone_tps: 20.1, strategy: "auto", drafted: 6, accepted: 2, wall_ms: 9100, finish: "tool_calls" },
      ] : [],
    };
  }

  async serverStart(request: ServerRequest): Promise<ServerStatus> {
    this.server = request;
    return this.status();
  }

  async serverStop(): Promise<ServerStatus> {
    this.server = null;
    return this.status();
  }

  async serverStatus(): Promise<ServerStatus> {
    return this.status();
  }
}
