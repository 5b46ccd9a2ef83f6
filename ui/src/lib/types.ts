// The types the Rust side sends and receives (src-tauri/src/run.rs, history.rs, lib.rs and the
// engine's report, doctor and compare modules). Keep in step with them.

export type Mode = "baseline" | "speculative";
export type TokenSource = "target" | "draft";
export type StrategyName = "draft-model" | "prompt-lookup" | "ngram-cache" | "ngram-map" | "auto";
export type GpuLayers = "all" | { count: number };
export type StopReason = "max_tokens" | "end_of_generation" | "context_full" | "cancelled";
export type VerdictLevel = "ok" | "warning" | "incompatible";

export interface ApiError {
  code: string;
  message: string;
  hint: string;
}

export interface SamplingParams {
  temperature: number;
  top_k: number;
  top_p: number;
  min_p: number;
  seed: number;
}

export interface Settings {
  n_predict: number;
  n_draft: number;
  p_min: number;
  n_ctx: number;
  n_batch: number;
  threads: number;
  raw: boolean;
  gpu_layers: GpuLayers;
  strategy: StrategyName;
  adaptive: boolean;
  lookup_min: number;
  lookup_max: number;
  sampling: SamplingParams;
  ngram_map: string | null;
  keep_ngram_cache: boolean;
}

export interface RunRequest {
  target: string;
  draft: string | null;
  prompt: string;
  modes: Mode[];
  settings: Settings;
}

export interface ModelId {
  path: string;
  name: string;
  architecture: string;
  quantization: string;
  n_params: number;
  file_size: number;
}

export interface TokenView {
  text: string;
  source: TokenSource;
  step: number;
  strategy?: string;
}

export interface LiveStats {
  tokens: number;
  elapsed_ms: number;
  tokens_per_s: number;
  steps: number;
  drafted: number;
  accepted: number;
  acceptance_rate: number;
  mean_accepted_len: number;
  draft_ms: number;
  verify_ms: number;
}

export interface StrategyStats {
  strategy: string;
  rounds: number;
  drafted: number;
  accepted: number;
}

export interface Report {
  mode: Mode;
  strategy: string | null;
  prompt_tokens: number;
  prompt_ms: number;
  generated_tokens: number;
  wall_ms: number;
  generation_ms: number;
  tokens_per_s: number;
  target_passes: number;
  drafted: number;
  accepted: number;
  acceptance_rate: number;
  mean_accepted_len: number;
  draft_ms: number;
  verify_ms: number;
  stop_reason: StopReason;
  text: string;
  tokens: number[];
  sources: TokenSource[];
  by_strategy: StrategyStats[];
  notes: string[];
  target: ModelId;
  draft: ModelId | null;
}

export interface Divergence {
  /// Index of the first differing token.
  position: number;
  baseline_token: number;
  speculative_token: number;
  baseline_margin: number;
  speculative_margin: number;
  near_tie: boolean;
  /// Characters of text the runs share before the divergence.
  common_text_len: number;
}

export interface Comparison {
  identical: boolean;
  compared: number;
  baseline_tokens: number;
  speculative_tokens: number;
  divergence: Divergence | null;
  sampled_at: number | null;
}

export type RunEvent =
  | { type: "loading"; mode: Mode }
  | { type: "loaded"; mode: Mode; target: ModelId; draft: ModelId | null; load_ms: number; warm: boolean }
  | { type: "tokens"; mode: Mode; tokens: TokenView[]; stats: LiveStats; first_token_at_ms: number }
  | { type: "done"; mode: Mode; report: Report }
  | { type: "compared"; comparison: Comparison; verdict: string; speedup: number }
  | { type: "failed"; mode: Mode; error: ApiError };

export interface RunOutcome {
  history_id: string | null;
  cancelled: boolean;
}

export interface Finding {
  level: VerdictLevel;
  topic: "vocabulary" | "size" | "context" | "memory";
  message: string;
}

export interface Diagnosis {
  verdict: VerdictLevel;
  findings: Finding[];
  memory: { needed: number; available: number; total: number; context: number };
  target: { name: string | null; architecture: string; n_params: number; quantization: string };
  draft: { name: string | null; architecture: string; n_params: number; quantization: string } | null;
}

export interface HistoryEntry {
  id: string;
  saved_at: number;
  target: string;
  draft: string | null;
  prompt: string;
  modes: Mode[];
  speedup: number | null;
  identical: boolean | null;
  tokens_per_s: number[];
}

export interface HistoryRun {
  id: string;
  saved_at: number;
  request: RunRequest;
  reports: Report[];
  comparison: Comparison | null;
  speedup: number | null;
}
