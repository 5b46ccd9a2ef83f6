// Generated from the Rust types by `scripts/gen-types` (src-tauri/src/bindings.rs). Do not edit.
// 64-bit integers are `number`: serde_json writes them as plain JSON numbers.

export type Mode = "baseline" | "speculative";

export type TokenSource = "target" | "draft" | "grammar";

export type StopReason = "max_tokens" | "end_of_generation" | "context_full" | "cancelled";

export type Strategy = "draft" | "lookup" | "ngram-cache" | "ngram-map" | "ngram-mod" | "mtp" | "eagle3" | "dflash" | "dspark" | "auto";

export type DraftUse = "none" | "optional" | "required";

export type StrategyInfo = { strategy: Strategy, label: string, reads: Array<Setting>, 
/**
 * The settings it cannot run without (a view that does not offer them does not offer it).
 */
needs: Array<Setting>, draft: DraftUse, 
/**
 * The kind of drafter file it runs, when it runs one (`mtp`'s is optional).
 */
head: DrafterKind | null, 
/**
 * Its tokens are a model's guesses (a draft model, the target's MTP layers, a head), not an
 * n-gram table's: the app colours them apart.
 */
model_drafts: boolean, };

export type Setting = "n_predict" | "n_draft" | "adaptive" | "p_min" | "n_ctx" | "n_batch" | "threads" | "raw" | "gpu_layers" | "draft_gpu_layers" | "strategy" | "lookup_min" | "lookup_max" | "temperature" | "top_k" | "top_p" | "min_p" | "seed" | "ngram_map" | "keep_ngram_cache" | "flash_attn" | "cache_type" | "draft_cache_type" | "rpc" | "tensor_split" | "constraint" | "draft" | "targets" | "drafts" | "n_drafts" | "strategies" | "reps" | "prompts";

export type SettingInfo = { setting: Setting, 
/**
 * Its field name (as errors and JSON name it).
 */
name: string, 
/**
 * How the app names it.
 */
label: string, 
/**
 * The CLI flag that sets it (none: not a flag of its own).
 */
flag: string | null, };

export type GpuLayers = "all" | { "count": number };

export type FlashAttn = "auto" | "on" | "off";

export type KvType = "f16" | "q8_0" | "q4_0";

export type SamplingParams = { 
/**
 * 0 means greedy (the argmax, no randomness).
 */
temperature: number, 
/**
 * Keep the k most likely tokens (0: no limit).
 */
top_k: number, 
/**
 * Keep the smallest set of most likely tokens whose probability reaches top_p (1: no limit).
 */
top_p: number, 
/**
 * Drop tokens less likely than min_p × the most likely one (0: no limit).
 */
min_p: number, seed: number, };

export type Settings = { 
/**
 * Tokens to generate at most.
 */
n_predict: number, 
/**
 * Tokens to draft per round at most (with `adaptive`, the largest length it may choose).
 */
n_draft: number, 
/**
 * Stop drafting when the draft's top probability is below this.
 */
p_min: number, 
/**
 * Context size (tokens) of each model.
 */
n_ctx: number, 
/**
 * Largest batch of one decode call (prompt chunks).
 */
n_batch: number, 
/**
 * CPU threads per model (0: the physical cores; see [`Settings::validate`]).
 */
threads: number, 
/**
 * Skip the chat template.
 */
raw: boolean, gpu_layers: GpuLayers, 
/**
 * How speculative runs draft.
 */
strategy: Strategy, 
/**
 * Choose each round's draft length (up to `n_draft`) from observed acceptance and measured
 * verify costs, instead of always drafting `n_draft`.
 */
adaptive: boolean, 
/**
 * Prompt lookup: the shortest and longest n-gram to match.
 */
lookup_min: number, lookup_max: number, 
/**
 * Temperature and filters; temperature 0 is greedy.
 */
sampling: SamplingParams, 
/**
 * The n-gram map file (`ngram-map` strategy; also used by `auto` when given).
 */
ngram_map: string | null, 
/**
 * Start the n-gram cache from what earlier runs learned (per vocabulary, in the app data
 * folder) and save it when the run ends.
 */
keep_ngram_cache: boolean, 
/**
 * Flash attention for both models: llama.cpp decides per device (`auto`), or on, or off.
 */
flash_attn: FlashAttn, 
/**
 * The target's KV cache type (keys and values).
 */
cache_type: KvType, 
/**
 * The draft model's KV cache type.
 */
draft_cache_type: KvType, 
/**
 * The draft model's GPU layers (none: as many as the target's).
 */
draft_gpu_layers: GpuLayers | null, 
/**
 * Other machines (`host:port` of `draftlab rpc-server` or llama.cpp's rpc-server) that hold
 * a share of the target's layers, through llama.cpp's RPC backend; the draft stays here.
 */
rpc: Array<string>, 
/**
 * How the target's layers split over this machine's GPU and the `rpc` machines' devices, one
 * weight per device in that order (llama.cpp's `--tensor-split`); empty: in proportion to the
 * memory each offers.
 */
tensor_split?: Array<number>, 
/**
 * What the output must be (JSON matching a schema, a grammar): the target's choices are
 * masked by it, and what it forces is drafted for free. None: any text.
 */
constraint?: Constraint | null, 
/**
 * Each output token's log probability under the target, with this many of the most likely
 * tokens at its place (at most [`MAX_TOP_LOGPROBS`]); none: not computed (each costs a pass
 * over the vocabulary).
 */
logprobs?: number | null, };

export type Constraint = { "kind": "json_schema", schema: string, } | { "kind": "json_object" } | { "kind": "lark", grammar: string, };

export type Limits = { max_draft: number, min_ctx: number, 
/**
 * The longest n-gram the n-gram cache and maps keep.
 */
max_table_ngram: number, defaults: Settings, };

export type ErrorCode = "not_found" | "io" | "invalid_gguf" | "incompatible" | "out_of_memory" | "invalid_settings" | "invalid_prompt" | "context_too_long" | "load_failed" | "invalid_ngram_map" | "llama" | "chart_failed" | "invalid_results" | "hub_unauthorized" | "hub_not_found" | "network" | "disk_full" | "checksum_mismatch" | "cancelled" | "busy" | "download_failed" | "invalid_name" | "bad_request" | "worker_died" | "worker_start" | "corrupt_history" | "internal" | "remote";

export type ErrorInfo = { code: ErrorCode, message: string, hint: string, 
/**
 * The setting at fault, for an invalid setting…
 */
setting?: Setting, 
/**
 * …and the rule it breaks, a sentence whose subject is the setting ("is 0, but must be at
 * least 1"): the app says it after the setting's label, the CLI after its flag.
 */
reason?: string, };

export type ModelId = { path: string, name: string, architecture: string, quantization: string, n_params: number, file_size: number, 
/**
 * Seconds since the epoch of the file's last modification (with the size: a cheap identity).
 */
mtime: number, };

export type Offload = { requested: GpuLayers, offloaded: number, layers: number, 
/**
 * llama.cpp's name of the first device other than the CPU that holds a layer ("MTL0",
 * "CUDA0", "RPC0[host:port]"); none when every layer is on the CPU.
 */
device?: string, };

export type Runtime = { 
/**
 * "Metal", "CUDA", "Vulkan" or "CPU": the backend of the device the target's layers are on.
 */
backend: string, 
/**
 * That device ("Apple M3 Max", the CPU's name).
 */
device: string, 
/**
 * The GPU's memory limit (on Apple Silicon Metal's recommended working set), when a GPU is used.
 */
gpu_memory: number | null, threads: number, target: Offload | null, draft: Offload | null, };

export type MachineInfo = { cpu: string, arch: string, physical_cores: number, logical_cores: number, memory_total: number, memory_available: number, os: string, 
/**
 * Which llama.cpp backend this build offloads to.
 */
gpu_backend: string, };

export type StrategyStats = { strategy: Strategy, 
/**
 * Rounds in which it proposed the draft.
 */
rounds: number, drafted: number, accepted: number, };

export type Decision = "fixed" | "chosen" | "explored" | "not_worth" | "nothing_offered" | "forced";

export type RoundRecord = { decision: Decision, 
/**
 * The drafter whose tokens were verified (none when nothing was drafted).
 */
strategy: Strategy | null, drafted: number, accepted: number, };

export type Report = { mode: Mode, 
/**
 * The drafting strategy (speculative runs).
 */
strategy: Strategy | null, prompt_tokens: number, 
/**
 * Prompt processing on the target (and the draft, for speculative runs), in ms.
 */
prompt_ms: number, 
/**
 * Prompt tokens the target's KV cache already held (a conversation's earlier turns): not
 * decoded again.
 */
prompt_reused: number, 
/**
 * The target alone's generation tokens/s, for the speedup estimate of a run with no baseline
 * beside it: from this run's own rounds that drafted nothing after a round that drafted
 * nothing (steps of the target alone, under the same load), or when it had too few, from the
 * step cost measured for the schedule (adaptive runs).
 */
target_alone_tps: number | null, generated_tokens: number, 
/**
 * From the start of prompt processing to the last token, in ms.
 */
wall_ms: number, 
/**
 * After prompt processing, in ms.
 */
generation_ms: number, 
/**
 * Generation speed: tokens after the first (which comes from the prompt pass) ÷ generation time.
 */
tokens_per_s: number, 
/**
 * End to end: all generated tokens ÷ wall time (prompt included).
 */
e2e_tokens_per_s: number, 
/**
 * Target forward passes during generation (one per round).
 */
target_passes: number, drafted: number, accepted: number, 
/**
 * Tokens the output's grammar forced and the loop drafted for free (not in `drafted`), and
 * how many of them the target accepted (not in `accepted`).
 */
forced_drafted: number, forced_accepted: number, 
/**
 * accepted ÷ drafted.
 */
acceptance_rate: number, 
/**
 * Accepted draft tokens per target pass.
 */
mean_accepted_len: number, 
/**
 * Generated tokens per target pass (1 for baseline).
 */
tokens_per_pass: number, 
/**
 * Time spent drafting, in ms.
 */
draft_ms: number, 
/**
 * Time spent in the target's verify passes, in ms.
 */
verify_ms: number, 
/**
 * Tokens the drafter's model decoded during generation (its cost in its own token steps).
 */
draft_decoded_tokens: number, 
/**
 * Milliseconds a draft across vocabularies spent re-tokenizing (0 with a shared vocabulary).
 */
translate_ms: number, 
/**
 * `drafted_by_position[i]`: rounds that drafted a token at position i.
 */
drafted_by_position: Array<number>, 
/**
 * `accepted_by_position[i]`: rounds whose token at position i was accepted.
 */
accepted_by_position: Array<number>, 
/**
 * How many rounds drafted exactly k tokens (index k).
 */
draft_len_histogram: Array<number>, 
/**
 * How many drafting rounds accepted exactly k tokens (index k).
 */
accepted_len_histogram: Array<number>, 
/**
 * When each generated token was known, in ms since generation started (after the prompt).
 */
token_ms: Array<number>, 
/**
 * Drafted and accepted tokens per strategy that proposed them (one entry for single
 * strategies; several for `auto`).
 */
by_strategy: Array<StrategyStats>, 
/**
 * Speculative runs: what each round decided and why (see [`Decision`]), so a run that
 * drafted little, or lost time, can be explained round by round.
 */
rounds: Array<RoundRecord>, 
/**
 * Things the user should know about the run (e.g. a saved n-gram cache that was unusable).
 */
notes: Array<string>, stop_reason: StopReason, text: string, tokens: Array<number>, 
/**
 * The target's top-2 logit margin at each generated token (see `compare`).
 */
margins: Array<number>, sources: Array<TokenSource>, target: ModelId, draft: ModelId | null, settings: Settings, machine: MachineInfo, 
/**
 * What llama.cpp really computed on: backend, device, threads, layers offloaded.
 */
runtime: Runtime | null, 
/**
 * Seconds since the Unix epoch when the run started.
 */
started_at: number, };

export type Divergence = { 
/**
 * Index of the first differing generated token.
 */
position: number, baseline_token: number, speculative_token: number, 
/**
 * The target's top-2 margin there in the baseline run (one-token decoding).
 */
baseline_margin: number, 
/**
 * The same in the speculative run (batched verify).
 */
speculative_margin: number, 
/**
 * True when the divergence is explained by numerical noise (see [`NEAR_TIE_MARGIN`]).
 */
near_tie: boolean, 
/**
 * The text both runs agreed on before the divergence.
 */
common_text_len: number, };

export type Comparison = { 
/**
 * Both runs produced the same tokens over `compared` positions.
 */
identical: boolean, compared: number, baseline_tokens: number, speculative_tokens: number, divergence: Divergence | null, 
/**
 * The runs sampled (temperature > 0): token-for-token equality is not expected.
 */
sampled_at: number | null, };

export type Verdict = "ok" | "warning" | "incompatible";

export type Topic = "vocabulary" | "size" | "context" | "memory" | "mtp" | "drafter";

export type Pairing = "same-vocabulary" | "cross-vocabulary";

export type Finding = { level: Verdict, topic: Topic, message: string, };

export type MemoryVerdict = "fits" | "tight" | "too_big";

export type MemoryFit = { context: number, target_weights: number, target_kv: number, draft_weights: number, draft_kv: number, 
/**
 * Compute buffers and other overhead (an estimate).
 */
overhead: number, needed: number, 
/**
 * The part of `needed` on the GPU (weights of offloaded layers, their caches, buffers).
 */
gpu_needed: number, available: number, total: number, 
/**
 * The most the GPU may use (Apple Silicon's working set), when this build offloads to one.
 */
gpu_budget: number | null, 
/**
 * The limit the verdict used, in bytes, and why it is that number.
 */
limit: number, limit_reason: string, verdict: MemoryVerdict, };

export type DrafterKind = "mtp-head" | "eagle3" | "dflash" | "dspark";

export type DrafterKindInfo = { kind: DrafterKind, 
/**
 * Its short name ("MTP head").
 */
label: string, 
/**
 * Draftlab's strategy for it.
 */
strategy: string, };

export type VocabSummary = { 
/**
 * `tokenizer.ggml.model` as written in the file (`gpt2`, `llama`, …).
 */
tokenizer_model: string, 
/**
 * llama.cpp's name for the vocabulary type (BPE, SPM, …).
 */
vocab_type: string, size: number, bos_id: number | null, eos_id: number | null, add_bos: boolean, add_eos: boolean, 
/**
 * First 8 bytes of the SHA-256 of all token texts: equal fingerprints, equal vocabularies.
 */
fingerprint: string, };

export type ModelSummary = { path: string, file_size: number, gguf_version: number, name: string | null, architecture: string, n_params: number, quantization: string, context_length: number | null, n_layer: number | null, n_embd: number | null, n_head: number | null, n_head_kv: number | null, 
/**
 * Bytes of f16 KV cache per context token (all layers, K and V).
 */
kv_bytes_per_token: number | null, n_tensors: number, has_chat_template: boolean, 
/**
 * Multi-token-prediction layers (`<arch>.nextn_predict_layers`): the model carries its own
 * drafter. None when it has none.
 */
mtp_layers: number | null, 
/**
 * The kind of drafter file this is (an MTP head, an EAGLE-3 head, a DFlash or DSpark
 * drafter), or none for a model that generates on its own.
 */
drafter: DrafterKind | null, vocab: VocabSummary, };

export type Diagnosis = { verdict: Verdict, findings: Array<Finding>, memory: MemoryFit, target: ModelSummary, draft: ModelSummary | null, 
/**
 * How the draft's tokens relate to the target's (none without a draft).
 */
pairing: Pairing | null, };

export type RunRequest = { target: string, draft: string | null, prompt: string, 
/**
 * In order; `[baseline, speculative]` runs both and compares them.
 */
modes: Array<Mode>, settings: Settings, 
/**
 * Draw charts while it runs (tokens/s over time) and after (acceptance, lengths, speedup);
 * on unless `false`.
 */
charts?: boolean, };

export type TokenView = { text: string, source: TokenSource, step: number, strategy?: Strategy, };

export type LiveStats = { tokens: number, elapsed_ms: number, tokens_per_s: number, steps: number, drafted: number, accepted: number, acceptance_rate: number, mean_accepted_len: number, draft_ms: number, verify_ms: number, 
/**
 * Rounds that drafted nothing after a round that drafted nothing (steps of the target alone,
 * timed now), and their time: the live speedup estimate's reference.
 */
steady_steps: number, steady_ms: number, };

export type RunEvent = { "type": "loading", mode: Mode, } | { "type": "loaded", mode: Mode, target: ModelId, draft: ModelId | null, load_ms: number, warm: boolean, } | { "type": "tokens", mode: Mode, tokens: Array<TokenView>, stats: LiveStats, first_token_at_ms: number, } | { "type": "done", mode: Mode, report: Report, } | { "type": "compared", comparison: Comparison, verdict: string, speedup: number | null, } | { "type": "failed", mode: Mode, error: ErrorInfo, } | { "type": "charts", charts: Array<RenderedChart>, };

export type RunOutcome = { 
/**
 * The history entry the run was saved as (none when nothing finished).
 */
history_id: string | null, cancelled: boolean, };

export type HistoryEntry = { id: string, saved_at: number, target: string, draft: string | null, prompt: string, modes: Array<Mode>, speedup: number | null, identical: boolean | null, tokens_per_s: Array<number>, 
/**
 * The fewest tokens a run of it generated (a speedup over a few tokens says little).
 */
tokens: number, };

export type ModeTokens = { mode: Mode, tokens: Array<TokenView>, };

export type HistoryRun = { id: string, 
/**
 * Seconds since the Unix epoch.
 */
saved_at: number, request: RunRequest, reports: Array<Report>, comparison: Comparison | null, speedup: number | null, 
/**
 * Each mode's tokens as the window showed them (runs saved before this was kept have none:
 * their text is shown plain).
 */
tokens: Array<ModeTokens>, };

export type OpenedRun = { run: HistoryRun, verdict: string | null, charts: Array<RenderedChart>, };

export type LoadedModels = { target: string, draft: string | null, 
/**
 * What llama.cpp computes on ("CPU · 2 threads", "Metal · Apple M3 Max · …").
 */
device: string | null, };

export type EngineStatus = { 
/**
 * An engine process is running.
 */
running: boolean, 
/**
 * It is working on a run or a sweep.
 */
busy: boolean, 
/**
 * The models it keeps warm for the next run.
 */
loaded: LoadedModels | null, 
/**
 * Seconds since it last did anything (0 while busy).
 */
idle_s: number, 
/**
 * Its resident memory in bytes.
 */
rss_bytes: number | null, 
/**
 * Warm models are unloaded after this many idle seconds (0: never).
 */
unload_after_s: number, };

export type UnloadReason = "asked" | "idle";

export type UnloadOutcome = { reason: UnloadReason, 
/**
 * Models were loaded (false: nothing to free).
 */
had_models: boolean, rss_before: number | null, rss_after: number | null, };

export type AppInfo = { version: string, data_dir: string, machine: MachineInfo, };

export type Spread = { median: number, min: number, max: number, };

export type BarGroup = { label: string, 
/**
 * Tokens/s of the baseline runs.
 */
baseline: Spread, 
/**
 * Tokens/s of the speculative runs.
 */
speculative: Spread, };

export type BarsChart = { title: string, groups: Array<BarGroup>, };

export type Series = { label: string, 
/**
 * (x, y) points in order of x.
 */
points: Array<[number, number]>, };

export type TimelineChart = { title: string, 
/**
 * x: seconds since generation started; y: tokens/s.
 */
series: Array<Series>, };

export type PositionsChart = { title: string, 
/**
 * `drafted[i]`: rounds that drafted a token at position i (0-based).
 */
drafted: Array<number>, 
/**
 * `accepted[i]`: rounds whose token at position i was accepted.
 */
accepted: Array<number>, };

export type LengthsChart = { title: string, 
/**
 * `histogram[k]`: rounds that accepted exactly k draft tokens.
 */
histogram: Array<number>, };

export type HeatCell = { "state": "speedup", speedup: Spread, setting: string, cross: boolean, } | { "state": "incompatible" } | { "state": "too_big" } | { "state": "failed" } | { "state": "pending" };

export type HeatmapChart = { title: string, 
/**
 * Targets, top to bottom.
 */
rows: Array<string>, 
/**
 * Drafts (and draftless strategies), left to right.
 */
cols: Array<string>, 
/**
 * `cells[row][col]`.
 */
cells: Array<Array<HeatCell>>, };

export type DraftLengthSeries = { label: string, 
/**
 * (draft length, measured speedup).
 */
measured: Array<[number, number]>, 
/**
 * (draft length, predicted speedup).
 */
predicted: Array<[number, number]>, };

export type DraftLengthChart = { title: string, series: Array<DraftLengthSeries>, };

export type CardTone = "faster" | "slower" | "noise" | "short";

export type CardPiece = { text: string, drafted: boolean, };

export type CardChart = { 
/**
 * The pair: the target, and what drafted for it.
 */
title: string, 
/**
 * This machine: chip, memory, backend.
 */
machine: string, 
/**
 * The verdict, large: "1.42× faster".
 */
headline: string, tone: CardTone, 
/**
 * The rates and the output: "16.1 → 22.9 tok/s · identical output".
 */
detail: string, 
/**
 * Why it is within noise or too short to judge (may be empty); the spread of repeated runs.
 */
reason: string, 
/**
 * Tokens/s of the target alone and with its drafter.
 */
baseline: Spread, speculative: Spread, 
/**
 * The start of the drafted run's output.
 */
excerpt: Array<CardPiece>, };

export type Chart = { "kind": "bars" } & BarsChart | { "kind": "timeline" } & TimelineChart | { "kind": "positions" } & PositionsChart | { "kind": "lengths" } & LengthsChart | { "kind": "heatmap" } & HeatmapChart | { "kind": "draft-length" } & DraftLengthChart | { "kind": "card" } & CardChart;

export type RenderedChart = { chart: Chart, svg: string, };

export type Variant = { cache_type: KvType, draft_cache_type: KvType, 
/**
 * None: as the target's GPU layers.
 */
draft_gpu_layers: GpuLayers | null, flash_attn: FlashAttn, };

export type SweepSpec = { targets: Array<string>, 
/**
 * Draft models (used by the `draft-model` and `auto` strategies) and drafter files (an MTP,
 * EAGLE-3, DFlash or DSpark head: each runs with its own strategy, and `auto`).
 */
drafts: Array<string>, 
/**
 * Fixed draft lengths to try.
 */
n_drafts: Array<number>, strategies: Array<Strategy>, reps: number, warmup: number, prompt: string, 
/**
 * Everything else (tokens to generate, context, threads, sampling, …); `n_draft` and
 * `strategy` are set per cell.
 */
settings: Settings, 
/**
 * Each cell's draft length is the longest the cost-aware adaptive length may choose (the
 * setting that never loses to the target alone), rather than a fixed length (experiments).
 */
adaptive: boolean, 
/**
 * Placement and cache setups to compare (a grid dimension); empty: the one in `settings`.
 */
variants: Array<Variant>, };

export type SweepDefaults = { n_drafts: Array<number>, reps: number, warmup: number, };

export type CellKey = { target: number, 
/**
 * None for strategies that need no draft model.
 */
draft: number | null, strategy: Strategy, n_draft: number, 
/**
 * Index into the spec's variants (0 when it has none).
 */
variant: number, };

export type CellOutcome = { "state": "measured", 
/**
 * Tokens/s.
 */
baseline: Spread, speculative: Spread, 
/**
 * Speculative ÷ baseline, per alternating repetition.
 */
speedup: Spread, acceptance_rate: number, mean_accepted_len: number, 
/**
 * Greedy output identical to the target alone (or explained by a near tie).
 */
identical: boolean, 
/**
 * The draft drafted across vocabularies (through text).
 */
cross_vocabulary: boolean, } | { "state": "incompatible", reason: string, } | { "state": "too_big", reason: string, } | { "state": "failed", error: ErrorInfo, };

export type CellRecord = { key: CellKey, outcome: CellOutcome, 
/**
 * Predicted before measuring (none when the pair was not run).
 */
predicted_speedup: number | null, 
/**
 * Wall time the cell took, loading excluded.
 */
seconds: number, 
/**
 * The cell's setting as a llama.cpp command (none where llama.cpp cannot express it).
 */
llama_cpp: string | null, };

export type Recommendation = { target: string, 
/**
 * None when nothing beat the target alone.
 */
best: CellKey | null, speedup: number | null, 
/**
 * What to do, for people.
 */
advice: string, 
/**
 * The same setting with llama.cpp's own tools, when it has one.
 */
llama_cpp: string | null, };

export type SweepResults = { version: number, spec: SweepSpec, machine: MachineInfo, 
/**
 * Seconds since the Unix epoch.
 */
started_at: number, updated_at: number, 
/**
 * Cells measured (or refused) so far, in the order they finished.
 */
cells: Array<CellRecord>, 
/**
 * Predictions made before measuring, for every cell of a pair that loaded.
 */
predictions: Array<[CellKey, number]>, complete: boolean, 
/**
 * The cells the sweep plans (its spec's, counted by the engine when it starts: a drafter file
 * in the drafts adds its own rows). None in files written before it was recorded.
 */
total: number | null, };

export type SweepEvent = { "type": "planned", total: number, } | { "type": "resumed", done: number, } | { "type": "loading", target: string, draft: string | null, } | { "type": "predicted", cells: Array<[CellKey, number]>, } | { "type": "cell", key: CellKey, label: string, } | { "type": "progress", done: number, total: number, eta_s: number, record: CellRecord, } | { "type": "log", message: string, };

export type SweepRequest = { 
/**
 * A new sweep.
 */
spec: SweepSpec | null, 
/**
 * Or the id of a saved sweep to resume.
 */
resume: string | null, };

export type SweepUiEvent = { "type": "started", id: string, total: number, spec: SweepSpec, } | { "type": "engine", event: SweepEvent, } | { "type": "charts", charts: Array<RenderedChart>, recommendations: Array<Recommendation>, } | { "type": "finished", complete: boolean, };

export type SweepOutcome = { id: string, complete: boolean, };

export type SweepEntry = { id: string, updated_at: number, targets: Array<string>, drafts: Array<string>, done: number, total: number, complete: boolean, };

export type SweepView = { id: string, results: SweepResults, charts: Array<RenderedChart>, recommendations: Array<Recommendation>, };

export type ExportSource = { "kind": "run", id: string, } | { "kind": "sweep", id: string, };

export type ExportFormat = "csv" | "json";

export type ChatMessage = { 
/**
 * `system`, `user`, `assistant` or `tool` (a tool's result).
 */
role: string, content: string, 
/**
 * The tools an assistant turn called.
 */
tool_calls?: Array<ToolCall>, 
/**
 * A tool turn: the call it answers.
 */
tool_call_id?: string, };

export type ToolCall = { id: string, name: string, 
/**
 * The arguments, as JSON text (an object).
 */
arguments: string, };

export type Turn = { 
/**
 * `user`, `assistant`, or `tool` (a tool's result, as the user gave it).
 */
role: string, content: string, 
/**
 * The tools an answer called.
 */
tool_calls?: Array<ToolCall>, 
/**
 * A tool turn: the call it answers.
 */
tool_call_id?: string, 
/**
 * An answer's tokens as they were shown (provenance colours).
 */
tokens: Array<TokenView>, stats: TurnStats | null, };

export type TurnStats = { strategy: Strategy | null, tokens: number, tokens_per_s: number, drafted: number, accepted: number, acceptance_rate: number, 
/**
 * The target alone's tokens/s by the measured step cost (adaptive speculation measures it):
 * `tokens_per_s` ÷ this is the answer's speedup estimate.
 */
target_alone_tps: number | null, prompt_tokens: number, 
/**
 * Prompt tokens the models' caches kept from the turns before (not decoded again).
 */
prompt_reused: number, prompt_ms: number, stop_reason: StopReason, };

export type Conversation = { 
/**
 * Empty for a conversation never saved (it gets an id when first saved).
 */
id: string, title: string, 
/**
 * Seconds since the Unix epoch.
 */
updated_at: number, target: string, draft: string | null, 
/**
 * Speculative (the strategy in `settings`) or the target alone.
 */
mode: Mode, settings: Settings, system: string, turns: Array<Turn>, 
/**
 * The tools the model may call, as the user wrote them (a JSON array of OpenAI function
 * tools); empty: none.
 */
tools: string, };

export type ChatEntry = { id: string, title: string, updated_at: number, turns: number, target: string, };

export type ChatRequest = { target: string, draft: string | null, mode: Mode, settings: Settings, 
/**
 * The whole conversation (system prompt first), ending with the user's turn.
 */
messages: Array<ChatMessage>, 
/**
 * Answer in the room the context leaves instead of refusing a conversation that leaves too
 * little for `n_predict` tokens.
 */
open_ended: boolean, 
/**
 * The tools the model may call: a JSON array of OpenAI function tools (`{"type": "function",
 * "function": {"name", "description", "parameters"}}`, or the function alone); empty: none.
 */
tools: string, };

export type ChatEvent = { "type": "loading" } | { "type": "loaded", target: ModelId, draft: ModelId | null, load_ms: number, warm: boolean, } | { "type": "started", prompt_tokens: number, reused_tokens: number, prompt_ms: number, target_alone_tps: number | null, 
/**
 * A reasoning model's answer starts inside its thinking (the template opened it).
 */
thinking: boolean, } | { "type": "tokens", tokens: Array<TokenView>, stats: LiveStats, };

export type ChatAnswer = { report: Report, tokens: Array<TokenView>, stats: TurnStats, 
/**
 * The answer's text outside its tool calls (all of it when it called none).
 */
content: string, 
/**
 * The tools it called, read in the model family's format.
 */
tool_calls: Array<ToolCall>, };

export type ServerRequest = { target: string, draft: string | null, 
/**
 * Each request's defaults (a request may ask for another strategy, length or p_min).
 */
settings: Settings, port: number, 
/**
 * When set, requests must carry `Authorization: Bearer <key>`.
 */
api_key: string | null, };

export type Served = { 
/**
 * The answer's id, as the client got it.
 */
id: string, 
/**
 * When the answer ended, in ms since the Unix epoch.
 */
at_ms: number, 
/**
 * `chat/completions`, `completions`, `messages` or `responses`.
 */
api: string, prompt_tokens: number, 
/**
 * Prompt tokens a slot's cache already held.
 */
prompt_reused: number, tokens: number, tokens_per_s: number, 
/**
 * The target alone's tokens/s by its measured step cost (adaptive speculation): the speedup
 * is `tokens_per_s` ÷ this.
 */
target_alone_tps: number | null, 
/**
 * None: the target alone.
 */
strategy: Strategy | null, drafted: number, accepted: number, 
/**
 * From the request's arrival at the engine to its last token.
 */
wall_ms: number, 
/**
 * How the answer ended, in OpenAI's words (`stop`, `length`, `tool_calls`).
 */
finish: string, };

export type ServerStatus = { running: boolean, 
/**
 * `http://127.0.0.1:PORT/v1`, what clients take as their base URL.
 */
url: string | null, 
/**
 * The name clients give as `model`.
 */
model: string | null, target: string | null, draft: string | null, strategy: Strategy | null, adaptive: boolean, api_key: boolean, served: number, cancelled: number, refused_busy: number, 
/**
 * The recent answers, newest first (the Serve view's request log).
 */
requests: Array<Served>, };

export type Source = "hugging_face" | "lm_studio" | "ollama" | "folder";

export type FoundModel = { 
/**
 * The file to load (for Ollama, the blob).
 */
path: string, source: Source, 
/**
 * How its source names it: `org/repo/file.gguf`, `publisher/folder/file.gguf`, `name:tag`.
 */
label: string, file_size: number, 
/**
 * What the header says; none when the file is not a usable GGUF (then `error` says why).
 */
summary: ModelSummary | null, error: string | null, };

export type VocabGroup = { 
/**
 * The vocabulary fingerprint (see `gguf::VocabSummary`); empty for unreadable files.
 */
fingerprint: string, tokenizer: string, vocab_size: number, 
/**
 * Largest first.
 */
models: Array<FoundModel>, };

export type WayKind = "own-mtp" | "mtp-head" | "eagle3" | "dflash" | "dspark" | "same-vocabulary" | "cross-vocabulary" | "ngram";

export type Way = { kind: WayKind, 
/**
 * The kind in words ("draft model, same vocabulary", "EAGLE-3 head", …).
 */
label: string, 
/**
 * `--strategy` for it.
 */
strategy: string, 
/**
 * The file's label where it was found, the catalog id, or the strategy.
 */
name: string, 
/**
 * The file to give as `--draft` (none: nothing to give, or not downloaded yet).
 */
path: string | null, 
/**
 * Where it is: "Hugging Face cache", "LM Studio", "folder", "catalog", "the target", "built in".
 */
source: string, 
/**
 * Its catalog id, when the catalog lists it.
 */
catalog_id: string | null, 
/**
 * Bytes to download first (0 when it is on disk or needs no file).
 */
download: number, 
/**
 * Memory the target needs with it, and the verdict (the doctor's estimate at [`FINDER_CONTEXT`]).
 */
needed: number, memory: MemoryVerdict, 
/**
 * Its cost per token against the target's: measured by a run on this machine when one has
 * (`cost_measured`), else by the parameters a token passes through (a rough guide: the
 * cheaper, the more a draft of the same acceptance saves). None when unknown.
 */
cost: number | null, cost_measured: boolean, 
/**
 * What the doctor says of the pair (warnings included), in words.
 */
note: string, };

export type Refused = { name: string, path: string | null, source: string, reason: string, };

export type Drafters = { 
/**
 * The target, as given (a path or a catalog id).
 */
target: string, 
/**
 * Best first: own MTP layers, drafter files, same-vocabulary drafts (cheapest first),
 * cross-vocabulary drafts, then the n-gram strategies; on disk before the catalog's.
 */
ways: Array<Way>, refused: Array<Refused>, 
/**
 * One line on what was found (and, when only n-grams are left, why).
 */
summary: string, };

export type Candidate = { 
/**
 * "ngram-mod", "draft model · Qwen2.5-Coder-0.5B", "auto · with Qwen2.5-Coder-0.5B".
 */
label: string, strategy: Strategy, draft: string | null, 
/**
 * What drafts, in the finder's words.
 */
kind: WayKind, 
/**
 * Memory the target needs with it (the doctor's estimate), in bytes.
 */
memory: number, };

export type Dropped = { label: string, reason: string, 
/**
 * A catalog drafter not on this machine yet: its catalog id (the app offers *Download and Try*,
 * with the gain the catalog expects of it).
 */
download: string | null, };

export type SpeedVerdict = "faster" | "within_noise" | "slower";

export type TuneRow = { candidate: Candidate, 
/**
 * Predicted from the measured costs and a probe before it was measured.
 */
predicted: number | null, 
/**
 * Its tokens/s ÷ the target alone's, one per repetition and prompt.
 */
speedup: Spread, verdict: SpeedVerdict, 
/**
 * Tokens/s, of the target alone and with the setting.
 */
baseline_tps: Spread, speculative_tps: Spread, 
/**
 * Tokens it drafted over all its runs, and the share of them the target accepted.
 */
drafted: number, acceptance: number, 
/**
 * Greedy output identical to the target alone's (or apart only at a near tie), every prompt.
 */
identical: boolean, 
/**
 * The same setting with llama.cpp's own server, when llama.cpp has one.
 */
llama_cpp: string | null, };

export type TuneResult = { target: string, 
/**
 * The target's name for people (its `general.name`, else its file's).
 */
target_name: string, machine: MachineInfo, 
/**
 * The prompts' kinds.
 */
kinds: Array<string>, reps: number, 
/**
 * Measured settings, fastest first.
 */
rows: Array<TuneRow>, 
/**
 * Settings not measured, with why (predicted hopeless, too big, not downloaded).
 */
dropped: Array<Dropped>, 
/**
 * Seconds since the Unix epoch when it started, and how long it took.
 */
started_at: number, seconds: number, 
/**
 * Whether every setting was measured (false: cancelled).
 */
complete: boolean, };

export type TuneEvent = { "type": "planned", candidates: Array<Candidate>, dropped: Array<Dropped>, runs: number, } | { "type": "loading", draft: string | null, } | { "type": "predicted", label: string, predicted: number | null, dropped: string | null, } | { "type": "progress", done: number, total: number, eta_s: number, label: string, } | { "type": "measured", row: TuneRow, };

export type TuneRequest = { target: string, 
/**
 * The built-in prompts' kinds (code, prose, rewrite), when no prompt of the user's is given.
 */
kinds: Array<string>, 
/**
 * The user's own prompt instead.
 */
prompt: string | null, reps: number, 
/**
 * Tokens per run, threads, context and the rest (each setting brings its own strategy).
 */
settings: Settings, };

export type Experts = { count: number, used: number, 
/**
 * Feed-forward width of one expert.
 */
ff: number, 
/**
 * Width of the shared expert (0: none).
 */
shared_ff: number, 
/**
 * Gemma 4 26B-A4B: every layer runs the dense MLP (`ff` wide) beside the experts, whose gate
 * and up projections are one tensor.
 */
beside_dense?: boolean, 
/**
 * DeepSeek's `first_k_dense_replace`: the first this-many layers are dense (`ff` wide).
 */
dense_layers?: number, };

export type Swa = { window: number, full_every: number, };

export type Linear = { full_every: number, k_heads: number, v_heads: number, head_dim: number, conv: number, };

export type Global = { head_dim: number, kv_heads: number, k_eq_v: boolean, };

export type Mla = { q_lora: number, kv_lora: number, rope: number, nope: number, v_head_dim: number, };

export type Arch = { layers: number, embd: number, 
/**
 * Dense feed-forward width (for MoE models: of a dense layer, unused when every layer is MoE).
 */
ff: number, heads: number, kv_heads: number, head_dim: number, vocab: number, tied_embeddings: boolean, experts: Experts | null, swa: Swa | null, 
/**
 * A SentencePiece vocabulary (Gemma): no merge table in the header, unlike BPE.
 */
sentencepiece: boolean, 
/**
 * A hybrid (Qwen3.5, Qwen3.6, Qwen3-Next): Gated DeltaNet layers with a fixed-size recurrent
 * state and no KV cache, and one full-attention layer every `full_every`.
 */
linear?: Linear | null, 
/**
 * Multi-token-prediction layers the file carries after its `layers` (`nextn_predict_layers`:
 * the `-MTP` builds of Qwen3.6): full-attention blocks llama.cpp drafts with.
 */
mtp_layers?: number, 
/**
 * Gemma 4: the full-attention layers' own heads (`global_head_dim`,
 * `num_global_key_value_heads`, `attention_k_eq_v`).
 */
global?: Global | null, 
/**
 * Gemma 4 E2B/E4B (`num_kv_shared_layers`): the last this-many layers read the KV cache of an
 * earlier layer of their kind, so they have no K and V projections and no cache of their own.
 */
kv_shared_layers?: number, 
/**
 * The feed-forward width of those layers, when it differs (E2B's double-wide MLP).
 */
kv_shared_ff?: number, 
/**
 * Gemma 4 E2B/E4B (`hidden_size_per_layer_input`): a per-layer embedding of this width for
 * every layer, looked up per token like the token embeddings.
 */
per_layer_input?: number, 
/**
 * Multi-head latent attention (DeepSeek-V2's, GLM-4.7-Flash's): low-rank queries and one
 * compressed KV row per token and layer.
 */
mla?: Mla | null, 
/**
 * Bytes of tokenizer header per vocabulary entry, where measured on the family's files
 * (Gemma 4: 60, GLM-4.7: 61); 0 for the tokenizer kind's usual size.
 */
header_per_token?: number, };

export type Evidence = { 
/**
 * Names the repository and the file names.
 */
files: string, 
/**
 * States the model's shape (its config.json).
 */
arch: string, 
/**
 * States the exact sizes, when the entry has them.
 */
size: string | null, 
/**
 * Shows the recommended drafts in use, or their shared tokenizer.
 */
drafts: string | null, };

export type CatalogFile = { quant: string, file: string, 
/**
 * Bytes: exact when a public source states it, else computed from the tensor types the
 * quantisation uses (`size_estimated`). The hub says the exact size when the download starts.
 */
size: number, size_estimated: boolean, sha256: string | null, 
/**
 * The repository commit the size and hash were checked against: downloads fetch this
 * revision, not the branch head.
 */
revision: string | null, 
/**
 * Made with `llama-quantize --pure` (every matrix in the quantisation's own type, the token
 * embeddings Q8_0), not with the quantisation's usual mix.
 */
pure: boolean, 
/**
 * The publisher's own mix of types (unsloth's `UD-*` files, and their dynamic builds under
 * plain names): planned as the named quantisation, so only the stated size is exact.
 */
own_mix: boolean, };

export type CatalogModel = { 
/**
 * What `draftlab pull` takes, e.g. `qwen3-8b`.
 */
id: string, family: string, family_name: string, 
/**
 * What drafts with it, when it is a drafter rather than a model (an MTP head, EAGLE-3,
 * DFlash, DSpark).
 */
drafter: DrafterKind | null, 
/**
 * A drafter's targets (catalog ids).
 */
drafts_for: Array<string>, 
/**
 * All parameters (0 for a drafter whose shape the catalog does not state).
 */
params: number, 
/**
 * Mixture-of-experts models: the parameters one token uses.
 */
active_params: number | null, 
/**
 * Training context in tokens.
 */
context: number, 
/**
 * The hub repository.
 */
repo: string, 
/**
 * Files by quantisation, the default (Q4_K_M where there is one) first.
 */
files: Array<CatalogFile>, 
/**
 * Recommended draft models (catalog ids, best first): same vocabulary, smaller.
 */
drafts: Array<string>, 
/**
 * The shape (absent for a drafter head the catalog knows by its stated size only).
 */
arch: Arch | null, source: Evidence, notes: string | null, };

export type BundleDrafter = { 
/**
 * The catalog id of the drafter (the target's own id when it drafts for itself).
 */
id: string, 
/**
 * Draftlab's strategy for it (`--strategy`).
 */
strategy: string, 
/**
 * A file of its own to fetch (false: the target's own MTP layers).
 */
separate: boolean, 
/**
 * Bytes to fetch for it (0 when it is the target itself).
 */
size: number, 
/**
 * The speedup it can be expected to give before anything is measured ([`expected_speedup`]).
 */
expected: number, };

export type Fit = { id: string, 
/**
 * Bytes needed for the default file alone (weights, cache, buffers).
 */
needed: number, verdict: MemoryVerdict, 
/**
 * Not too big (it may still need other programs closed).
 */
fits: boolean, 
/**
 * The first recommended draft, and the verdict for the pair.
 */
draft: string | null, needed_with_draft: number | null, with_draft: MemoryVerdict | null, fits_with_draft: boolean | null, };

export type CatalogEntry = { model: CatalogModel, fit: Fit, 
/**
 * Everything in the catalog that drafts for it, best first (its own MTP layers, drafters made
 * for it, draft models).
 */
bundle: Array<BundleDrafter>, 
/**
 * What *With drafter* fetches: the first of the bundle that fits beside it on this machine.
 */
drafter: BundleDrafter | null, 
/**
 * Why there is none (nothing drafts for it, or nothing fits beside it).
 */
no_drafter: string | null, };

export type CatalogView = { models: Array<CatalogEntry>, 
/**
 * What the fit badges are judged against (bytes), and why it is that number: the GPU's
 * working set on Apple Silicon, memory free now elsewhere.
 */
limit: number, limit_reason: string, 
/**
 * The context the badges are for.
 */
context: number, };

export type DownloadEvent = { "type": "started", repo: string, file: string, total: number, resumed_from: number, } | { "type": "progress", downloaded: number, total: number, bytes_per_s: number, eta_s: number, } | { "type": "retrying", attempt: number, of: number, reason: string, wait_s: number, } | { "type": "verifying" } | { "type": "done", path: string, already: boolean, };

export const LIMITS: Limits = {
  "max_draft": 128,
  "min_ctx": 16,
  "max_table_ngram": 8,
  "defaults": {
    "n_predict": 256,
    "n_draft": 8,
    "p_min": 0.75,
    "n_ctx": 4096,
    "n_batch": 512,
    "threads": 0,
    "raw": false,
    "gpu_layers": "all",
    "strategy": "auto",
    "adaptive": true,
    "lookup_min": 1,
    "lookup_max": 4,
    "sampling": {
      "temperature": 0.0,
      "top_k": 40,
      "top_p": 0.95,
      "min_p": 0.05,
      "seed": 42
    },
    "ngram_map": null,
    "keep_ngram_cache": false,
    "flash_attn": "auto",
    "cache_type": "f16",
    "draft_cache_type": "f16",
    "draft_gpu_layers": null,
    "rpc": []
  }
};

export const STRATEGIES: StrategyInfo[] = [
  {
    "strategy": "draft",
    "label": "Draft model",
    "reads": [
      "p_min",
      "draft_gpu_layers",
      "draft_cache_type"
    ],
    "needs": [],
    "draft": "required",
    "head": null,
    "model_drafts": true
  },
  {
    "strategy": "lookup",
    "label": "Prompt lookup",
    "reads": [
      "lookup_min",
      "lookup_max"
    ],
    "needs": [],
    "draft": "none",
    "head": null,
    "model_drafts": false
  },
  {
    "strategy": "ngram-cache",
    "label": "N-gram cache",
    "reads": [
      "lookup_min",
      "lookup_max",
      "keep_ngram_cache"
    ],
    "needs": [],
    "draft": "none",
    "head": null,
    "model_drafts": false
  },
  {
    "strategy": "ngram-map",
    "label": "N-gram map (from a corpus)",
    "reads": [
      "ngram_map"
    ],
    "needs": [
      "ngram_map"
    ],
    "draft": "none",
    "head": null,
    "model_drafts": false
  },
  {
    "strategy": "ngram-mod",
    "label": "ngram-mod (llama.cpp's n-gram hash)",
    "reads": [],
    "needs": [],
    "draft": "none",
    "head": null,
    "model_drafts": false
  },
  {
    "strategy": "mtp",
    "label": "MTP (the target's own prediction layers, or an MTP head as the draft)",
    "reads": [
      "p_min"
    ],
    "needs": [],
    "draft": "optional",
    "head": "mtp-head",
    "model_drafts": true
  },
  {
    "strategy": "eagle3",
    "label": "EAGLE-3 head (as the draft)",
    "reads": [
      "p_min"
    ],
    "needs": [],
    "draft": "required",
    "head": "eagle3",
    "model_drafts": true
  },
  {
    "strategy": "dflash",
    "label": "DFlash drafter (as the draft)",
    "reads": [
      "p_min"
    ],
    "needs": [],
    "draft": "required",
    "head": "dflash",
    "model_drafts": true
  },
  {
    "strategy": "dspark",
    "label": "DSpark drafter (as the draft)",
    "reads": [
      "p_min"
    ],
    "needs": [],
    "draft": "required",
    "head": "dspark",
    "model_drafts": true
  },
  {
    "strategy": "auto",
    "label": "Auto (n-gram first, draft model fallback)",
    "reads": [
      "lookup_min",
      "lookup_max",
      "keep_ngram_cache",
      "ngram_map",
      "p_min",
      "draft_gpu_layers",
      "draft_cache_type"
    ],
    "needs": [],
    "draft": "optional",
    "head": null,
    "model_drafts": true
  }
];

export const SETTINGS: SettingInfo[] = [
  {
    "setting": "n_predict",
    "name": "n_predict",
    "label": "Max tokens",
    "flag": "-n/--n-predict"
  },
  {
    "setting": "n_draft",
    "name": "n_draft",
    "label": "Draft length",
    "flag": "--n-draft"
  },
  {
    "setting": "adaptive",
    "name": "adaptive",
    "label": "Adaptive draft length",
    "flag": "--n-draft adaptive"
  },
  {
    "setting": "p_min",
    "name": "p_min",
    "label": "p_min",
    "flag": "--p-min"
  },
  {
    "setting": "n_ctx",
    "name": "n_ctx",
    "label": "Context",
    "flag": "--ctx"
  },
  {
    "setting": "n_batch",
    "name": "n_batch",
    "label": "Batch",
    "flag": null
  },
  {
    "setting": "threads",
    "name": "threads",
    "label": "Threads",
    "flag": "--threads"
  },
  {
    "setting": "raw",
    "name": "raw",
    "label": "Raw prompt",
    "flag": "--raw"
  },
  {
    "setting": "gpu_layers",
    "name": "gpu_layers",
    "label": "GPU layers",
    "flag": "--gpu-layers"
  },
  {
    "setting": "draft_gpu_layers",
    "name": "draft_gpu_layers",
    "label": "Draft GPU layers",
    "flag": "--gpu-layers-draft"
  },
  {
    "setting": "strategy",
    "name": "strategy",
    "label": "Strategy",
    "flag": "--strategy"
  },
  {
    "setting": "lookup_min",
    "name": "lookup_min",
    "label": "Lookup min",
    "flag": "--lookup-min"
  },
  {
    "setting": "lookup_max",
    "name": "lookup_max",
    "label": "Lookup max",
    "flag": "--lookup-max"
  },
  {
    "setting": "temperature",
    "name": "temperature",
    "label": "Temperature",
    "flag": "--temp"
  },
  {
    "setting": "top_k",
    "name": "top_k",
    "label": "top-k",
    "flag": "--top-k"
  },
  {
    "setting": "top_p",
    "name": "top_p",
    "label": "top-p",
    "flag": "--top-p"
  },
  {
    "setting": "min_p",
    "name": "min_p",
    "label": "min-p",
    "flag": "--min-p"
  },
  {
    "setting": "seed",
    "name": "seed",
    "label": "Seed",
    "flag": "--seed"
  },
  {
    "setting": "ngram_map",
    "name": "ngram_map",
    "label": "N-gram map",
    "flag": "--ngram-map"
  },
  {
    "setting": "keep_ngram_cache",
    "name": "keep_ngram_cache",
    "label": "Keep the n-gram cache",
    "flag": "--keep-ngram-cache"
  },
  {
    "setting": "flash_attn",
    "name": "flash_attn",
    "label": "Flash attention",
    "flag": "--flash-attn"
  },
  {
    "setting": "cache_type",
    "name": "cache_type",
    "label": "KV cache",
    "flag": "--cache-type"
  },
  {
    "setting": "draft_cache_type",
    "name": "draft_cache_type",
    "label": "Draft KV cache",
    "flag": "--cache-type-draft"
  },
  {
    "setting": "rpc",
    "name": "rpc",
    "label": "Remote machines",
    "flag": "--rpc"
  },
  {
    "setting": "tensor_split",
    "name": "tensor_split",
    "label": "Split",
    "flag": "--tensor-split"
  },
  {
    "setting": "constraint",
    "name": "constraint",
    "label": "Output format",
    "flag": "--json-schema"
  },
  {
    "setting": "draft",
    "name": "draft",
    "label": "Draft",
    "flag": "--draft"
  },
  {
    "setting": "targets",
    "name": "targets",
    "label": "Targets",
    "flag": "--targets"
  },
  {
    "setting": "drafts",
    "name": "drafts",
    "label": "Drafts",
    "flag": "--drafts"
  },
  {
    "setting": "n_drafts",
    "name": "n_drafts",
    "label": "Draft lengths",
    "flag": "--n-draft"
  },
  {
    "setting": "strategies",
    "name": "strategies",
    "label": "Strategies",
    "flag": "--strategies"
  },
  {
    "setting": "reps",
    "name": "reps",
    "label": "Repetitions",
    "flag": "--reps"
  },
  {
    "setting": "prompts",
    "name": "prompts",
    "label": "Prompts",
    "flag": "--kind"
  }
];

export const FLASH_ATTN_MODES: FlashAttn[] = [
  "auto",
  "on",
  "off"
];

export const KV_TYPES: KvType[] = [
  "f16",
  "q8_0",
  "q4_0"
];

export const DRAFTER_KINDS: DrafterKindInfo[] = [
  {
    "kind": "mtp-head",
    "label": "MTP head",
    "strategy": "mtp"
  },
  {
    "kind": "eagle3",
    "label": "EAGLE-3 head",
    "strategy": "eagle3"
  },
  {
    "kind": "dflash",
    "label": "DFlash drafter",
    "strategy": "dflash"
  },
  {
    "kind": "dspark",
    "label": "DSpark drafter",
    "strategy": "dspark"
  }
];

export const SWEEP_DEFAULTS: SweepDefaults = {
  "n_drafts": [
    2,
    4,
    8
  ],
  "reps": 3,
  "warmup": 1
};
