//! TypeScript declarations of everything the UI sends and receives, generated from the Rust types
//! into `ui/src/lib/bindings.ts`. `scripts/gen-types` rewrites that file; the test
//! `typescript_bindings_are_fresh` fails when it no longer matches the Rust side.

use draftlab_core::decoding::{compare, constraint, options, report, sampling, settings, strategy, template};
use draftlab_core::files::{catalog, discover, doctor, estimate, finder, gguf, hub, memory};
use draftlab_core::measuring::sweep as engine_sweep;
use draftlab_core::measuring::{bench, charts, tune as engine_tune};
use draftlab_core::{error, machine, setting};
use ts_rs::{Config, TS};

use draftlab_core::serving::client;

use crate::{chat, chats, history, models, rendered, requests, run, serve, sweep, AppInfo, ExportFormat, ExportSource};

/// Where the file lives, relative to the workspace root.
pub const PATH: &str = "ui/src/lib/bindings.ts";

const HEADER: &str =
    "// Generated from the Rust types by `scripts/gen-types` (src-tauri/src/bindings.rs). Do not edit.\n\
// 64-bit integers are `number`: serde_json writes them as plain JSON numbers.\n";

/// Each type's declaration, exported, in the order given.
macro_rules! declare {
    ($out:ident, $cfg:ident; $($t:ty),* $(,)?) => {
        $(
            $out.push('\n');
            $out.push_str("export ");
            $out.push_str(&<$t as TS>::decl($cfg));
            $out.push('\n');
        )*
    };
}

/// The whole file: the types (the engine's words, a run and its results, the app's views and
/// models), then the values the page starts from.
pub fn typescript() -> String {
    // serde_json sends u64 as a JSON number, which JSON.parse turns into a number, never a bigint.
    let cfg = Config::new().with_large_int("number");
    let mut out = String::from(HEADER);
    engine_words(&mut out, &cfg);
    runs_and_results(&mut out, &cfg);
    views_and_models(&mut out, &cfg);
    constants(&mut out);
    out
}

/// Settings, strategies, errors and this machine.
fn engine_words(out: &mut String, cfg: &Config) {
    declare!(
        out,
        cfg;
        settings::Mode,
        report::TokenSource,
        report::StopReason,
        strategy::Strategy,
        strategy::DraftUse,
        strategy::StrategyInfo,
        setting::Setting,
        setting::SettingInfo,
        options::GpuLayers,
        options::FlashAttn,
        options::KvType,
        sampling::SamplingParams,
        settings::Settings,
        constraint::Constraint,
        settings::Limits,
        error::ErrorCode,
        error::ErrorInfo,
        options::ModelId,
        options::Offload,
        options::Runtime,
        machine::MachineInfo,
    );
}

/// A run's report and comparison, the doctor's diagnosis, history, the engine's status, charts.
fn runs_and_results(out: &mut String, cfg: &Config) {
    declare!(
        out,
        cfg;
        report::StrategyStats,
        report::Decision,
        report::RoundRecord,
        report::Report,
        compare::Divergence,
        compare::Comparison,
        doctor::Verdict,
        doctor::Topic,
        doctor::Pairing,
        doctor::Finding,
        memory::MemoryVerdict,
        doctor::MemoryFit,
        gguf::DrafterKind,
        gguf::DrafterKindInfo,
        gguf::VocabSummary,
        gguf::ModelSummary,
        doctor::Diagnosis,
        requests::RunRequest,
        rendered::TokenView,
        rendered::LiveStats,
        run::RunEvent,
        run::RunOutcome,
        history::HistoryEntry,
        history::ModeTokens,
        history::HistoryRun,
        history::OpenedRun,
        client::LoadedModels,
        client::EngineStatus,
        client::UnloadReason,
        client::UnloadOutcome,
        AppInfo,
        bench::Spread,
        charts::BarGroup,
        charts::BarsChart,
        charts::Series,
        charts::TimelineChart,
        charts::PositionsChart,
        charts::LengthsChart,
        charts::HeatCell,
        charts::HeatmapChart,
        charts::DraftLengthSeries,
        charts::DraftLengthChart,
        charts::CardTone,
        charts::CardPiece,
        charts::CardChart,
        charts::Chart,
        crate::rendered::RenderedChart,
    );
}

/// Sweeps, exports, chats, the server, models on disk, drafters, the tune, size estimates and
/// the catalog.
fn views_and_models(out: &mut String, cfg: &Config) {
    declare!(
        out,
        cfg;
        engine_sweep::Variant,
        engine_sweep::SweepSpec,
        engine_sweep::SweepDefaults,
        engine_sweep::CellKey,
        engine_sweep::CellOutcome,
        engine_sweep::CellRecord,
        engine_sweep::Recommendation,
        engine_sweep::SweepResults,
        engine_sweep::SweepEvent,
        sweep::SweepRequest,
        sweep::SweepUiEvent,
        sweep::SweepOutcome,
        sweep::SweepEntry,
        sweep::SweepView,
        ExportSource,
        ExportFormat,
        template::ChatMessage,
        template::ToolCall,
        chats::Turn,
        chats::TurnStats,
        chats::Conversation,
        chats::ChatEntry,
        chat::ChatRequest,
        chat::ChatEvent,
        chat::ChatAnswer,
        requests::ServerRequest,
        draftlab_server::log::Served,
        serve::ServerStatus,
        discover::Source,
        discover::FoundModel,
        discover::VocabGroup,
        finder::WayKind,
        finder::Way,
        finder::Refused,
        finder::Drafters,
        engine_tune::Candidate,
        engine_tune::Dropped,
        engine_tune::SpeedVerdict,
        engine_tune::TuneRow,
        engine_tune::TuneResult,
        engine_tune::TuneEvent,
        crate::tune::TuneRequest,
        estimate::Experts,
        estimate::Swa,
        estimate::Linear,
        estimate::Global,
        estimate::Mla,
        estimate::Arch,
        catalog::Evidence,
        catalog::CatalogFile,
        catalog::CatalogModel,
        catalog::BundleDrafter,
        catalog::Fit,
        models::CatalogEntry,
        models::CatalogView,
        hub::DownloadEvent,
    );
}

/// The engine's values the page starts from: limits and defaults, the tables of strategies and
/// settings, the choices it offers.
fn constants(out: &mut String) {
    // The engine's defaults and bounds as values (threads 0: "this machine's cores"), so the page
    // starts from the same settings as the CLI and shows the same limits.
    let limits = settings::Limits::get();
    let defaults = settings::Settings { threads: 0, ..limits.defaults.clone() };
    let limits = settings::Limits { defaults, ..limits };
    let json = serde_json::to_string_pretty(&limits).expect("limits serialise");
    out.push_str(&format!("\nexport const LIMITS: Limits = {json};\n"));
    // Every strategy with its label, the settings it reads and the draft file it takes; every
    // setting with its label and flag: the page lists, shows and names them from these alone.
    let strategies = serde_json::to_string_pretty(&strategy::Strategy::table()).expect("strategies serialise");
    out.push_str(&format!("\nexport const STRATEGIES: StrategyInfo[] = {strategies};\n"));
    let settings = serde_json::to_string_pretty(&setting::Setting::table()).expect("settings serialise");
    out.push_str(&format!("\nexport const SETTINGS: SettingInfo[] = {settings};\n"));
    // The choices the page offers and the names it shows them by: llama.cpp's flash-attention
    // modes and KV cache types, the drafter kinds, a sweep's first values.
    out.push_str(&format!("\nexport const FLASH_ATTN_MODES: FlashAttn[] = {};\n", pretty(&options::FlashAttn::ALL)));
    out.push_str(&format!("\nexport const KV_TYPES: KvType[] = {};\n", pretty(&options::KvType::ALL)));
    out.push_str(&format!(
        "\nexport const DRAFTER_KINDS: DrafterKindInfo[] = {};\n",
        pretty(&gguf::DrafterKind::table())
    ));
    out.push_str(&format!(
        "\nexport const SWEEP_DEFAULTS: SweepDefaults = {};\n",
        pretty(&engine_sweep::SweepSpec::defaults())
    ));
}

/// A value as the page's constant: pretty JSON.
fn pretty(v: &impl serde::Serialize) -> String {
    serde_json::to_string_pretty(v).expect("the page's constants serialise")
}
