//! The llama.cpp command line that reproduces a Draftlab setting: `llama-server` with today's flag
//! names and `--spec-type` values. Every command Draftlab prints (a sweep's cells and best settings,
//! `bench --json`, the app's best-setting cards) comes from here.
//!
//! The flags are those of [`FLAGS_FROM`]; the test `every_printed_flag_exists_in_llama_cpp` reads
//! that llama.cpp's `common/arg.cpp` and fails when a flag printed here is missing, removed there,
//! or not accepted by `llama-server`, so a rename breaks a test, not a user.
//!
//! What llama.cpp cannot express: `auto` (a cost-aware choice of drafter each round) has no
//! equivalent, so no command; the adaptive draft length is approximated by drafting up to the
//! maximum with `--spec-draft-n-min 0` and the draft's probability floor (`--spec-draft-p-min`),
//! which is said in [`LlamaCpp::note`].

use std::path::Path;

use crate::decoding::options::{FlashAttn, GpuLayers, KvType};
use crate::decoding::settings::{ngram_mod_sizes, Settings};
use crate::decoding::strategy::Strategy;
use crate::files::gguf::DrafterKind;

/// What llama.cpp's `ngram-cache` drafts at most, fixed (common/speculative.cpp).
const NGRAM_CACHE_DRAFT: usize = 8;

/// Where the flag names were taken from (and where the test checks them).
pub const FLAGS_FROM: &str =
    "llama.cpp common/arg.cpp as vendored by llama-cpp-sys-2 0.1.161 (the llama.cpp Draftlab runs)";

/// A command line and what it does not reproduce exactly.
#[derive(Debug, Clone, PartialEq)]
pub struct LlamaCpp {
    pub command: String,
    /// Where llama.cpp's behaviour differs from the measured setting (none: it is the same).
    pub note: Option<String>,
}

impl LlamaCpp {
    /// The command, and what it does not reproduce as a shell comment (so the line still runs).
    pub fn line(&self) -> String {
        match &self.note {
            Some(n) => format!("{}  # {n}", self.command),
            None => self.command.clone(),
        }
    }
}

/// Quotes a path or value for a POSIX shell when it needs it.
fn shell(s: &str) -> String {
    if !s.is_empty() && s.chars().all(|c| c.is_ascii_alphanumeric() || "-_./=:,+".contains(c)) {
        s.to_string()
    } else {
        format!("'{}'", s.replace('\'', "'\\''"))
    }
}

fn ngl(g: GpuLayers) -> String {
    match g {
        GpuLayers::All => "99".to_string(),
        GpuLayers::Count(n) => n.to_string(),
    }
}

/// How the user starts llama.cpp's server: the `llama-server` tool, or the one `llama` executable
/// llama.cpp's installers now ship (`llama serve` is `llama-server`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Launcher {
    /// `llama-server` is on the PATH.
    Server,
    /// Only `llama` is on the PATH: `llama serve`.
    Unified,
    /// Neither was found: `llama-server`, and a note naming both.
    Unknown,
}

impl Launcher {
    /// Which one this machine has (looked up on the PATH once per process).
    pub fn detect() -> Launcher {
        static FOUND: std::sync::OnceLock<Launcher> = std::sync::OnceLock::new();
        *FOUND.get_or_init(|| Launcher::from_path(std::env::var_os("PATH").as_deref()))
    }

    /// Which one the directories of `path` (a PATH value) hold.
    pub fn from_path(path: Option<&std::ffi::OsStr>) -> Launcher {
        let dirs: Vec<std::path::PathBuf> = path.map(|p| std::env::split_paths(p).collect()).unwrap_or_default();
        let has = |name: &str| {
            dirs.iter().any(|d| {
                let f = d.join(name);
                f.is_file() || f.with_extension("exe").is_file()
            })
        };
        if has("llama-server") {
            Launcher::Server
        } else if has("llama") {
            Launcher::Unified
        } else {
            Launcher::Unknown
        }
    }

    fn words(self) -> &'static [&'static str] {
        match self {
            Launcher::Server | Launcher::Unknown => &["llama-server"],
            Launcher::Unified => &["llama", "serve"],
        }
    }
}

/// The `llama-server` command for `settings` with this target (and draft), or none when the
/// strategy needs a draft that is missing (`auto` is llama.cpp's chain of the drafters it has). A caller whose draft
/// has another vocabulary passes none: llama.cpp drafts only within one vocabulary. Spelled for
/// the llama.cpp this machine has ([`Launcher::detect`]).
pub fn server_command(target: &Path, draft: Option<&Path>, s: &Settings) -> Option<LlamaCpp> {
    server_command_for(Launcher::detect(), target, draft, s)
}

/// The kind of drafter file at `path` (an MTP head, EAGLE-3, DFlash, DSpark), if it is one (a path
/// that cannot be read is taken for a draft model).
fn head_kind(path: &Path) -> Option<DrafterKind> {
    crate::files::gguf::GgufFile::open(path).ok().and_then(|g| g.drafter_kind())
}

/// The same, for a given way of starting llama.cpp's server.
pub fn server_command_for(launcher: Launcher, target: &Path, draft: Option<&Path>, s: &Settings) -> Option<LlamaCpp> {
    let mut c = Spelling { s, args: Vec::new(), notes: Vec::new() };
    c.push(launcher.words());
    c.push(&["-m", &shell(&target.display().to_string())]);
    c.strategy(target, draft)?;
    c.placement_and_caches();
    if s.adaptive {
        c.notes.push(format!(
            "llama.cpp has no cost-aware adaptive draft length: this drafts up to {} tokens a round",
            s.n_draft
        ));
    }
    if launcher == Launcher::Unknown {
        c.notes.push("no llama.cpp found on the PATH: `llama-server`, or `llama serve` with llama.cpp's single `llama` executable".into());
    }
    Some(LlamaCpp { command: c.args.join(" "), note: (!c.notes.is_empty()).then(|| c.notes.join("; ")) })
}

/// A llama.cpp command being spelled for `s`: its words, and notes on what it cannot reproduce.
struct Spelling<'a> {
    s: &'a Settings,
    args: Vec<String>,
    notes: Vec<String>,
}

impl Spelling<'_> {
    fn push(&mut self, a: &[&str]) {
        self.args.extend(a.iter().map(|x| x.to_string()));
    }

    /// llama.cpp's ngram-cache drafts at most 8 tokens, whatever --spec-draft-n-max says.
    fn cache_max(&mut self) {
        if self.s.n_draft != NGRAM_CACHE_DRAFT {
            self.notes.push(format!(
                "llama.cpp's ngram-cache drafts up to {NGRAM_CACHE_DRAFT} tokens whatever the draft length; Draftlab drafts up to {}",
                self.s.n_draft
            ));
        }
    }

    /// The strategy's flags; none when it needs a draft that is missing.
    fn strategy(&mut self, target: &Path, draft: Option<&Path>) -> Option<()> {
        let n = self.s.n_draft.to_string();
        match self.s.strategy {
            Strategy::Auto => self.auto(draft),
            Strategy::DraftModel => {
                let d = shell(&draft?.display().to_string());
                self.push(&["-md", &d, "-ngld", &ngl(self.s.draft_layers()), "--spec-type", "draft-simple"]);
                if self.s.draft_cache_type != KvType::F16 {
                    self.push(&["-ctkd", self.s.draft_cache_type.name(), "-ctvd", self.s.draft_cache_type.name()]);
                }
                self.push(&[
                    "--spec-draft-n-max",
                    &n,
                    "--spec-draft-n-min",
                    "0",
                    "--spec-draft-p-min",
                    &self.s.p_min.to_string(),
                ]);
            }
            Strategy::Mtp => {
                // With a head in a file of its own, llama.cpp loads it as the draft model.
                if let Some(head) = draft {
                    self.push(&["-md", &shell(&head.display().to_string()), "-ngld", &ngl(self.s.draft_layers())]);
                }
                self.push(&[
                    "--spec-type",
                    "draft-mtp",
                    "--spec-draft-n-max",
                    &n,
                    "--spec-draft-p-min",
                    &self.s.p_min.to_string(),
                ]);
            }
            Strategy::Eagle3 | Strategy::Dflash | Strategy::Dspark => {
                let head = shell(&draft?.display().to_string());
                let kind = self.s.strategy.head_kind().map_or("", |k| k.spec_type());
                self.push(&["-md", &head, "-ngld", &ngl(self.s.draft_layers()), "--spec-type", kind]);
                self.push(&["--spec-draft-n-max", &n, "--spec-draft-p-min", &self.s.p_min.to_string()]);
            }
            Strategy::PromptLookup => {
                let size_n = self.s.lookup_max.to_string();
                self.push(&["--spec-type", "ngram-simple", "--spec-ngram-simple-size-n", &size_n]);
                self.push(&["--spec-ngram-simple-size-m", &n]);
                self.notes.push(format!(
                    "llama.cpp matches n-grams of exactly {} tokens; Draftlab tries {} down to {}",
                    self.s.lookup_max, self.s.lookup_max, self.s.lookup_min
                ));
            }
            Strategy::NgramCache => {
                // `-lcd FILE` only reads a dynamic cache (llama-server aborts when the file is missing,
                // and never writes it): the cache Draftlab keeps between runs has no llama.cpp flag.
                self.push(&["--spec-type", "ngram-cache"]);
                self.cache_max();
                if self.s.keep_ngram_cache {
                    self.notes.push("llama-server does not keep its n-gram cache between runs as Draftlab does".into());
                }
            }
            Strategy::NgramMap => {
                // A static lookup cache built from the corpus: `llama-lookup-create -m TARGET -f
                // CORPUS.txt -lcs ngram-static.bin` makes it.
                self.push(&["--spec-type", "ngram-cache", "-lcs", "ngram-static.bin"]);
                self.cache_max();
                self.notes.push(format!(
                "first build ngram-static.bin from the corpus: llama-lookup-create -m {} -f CORPUS.txt -lcs ngram-static.bin",
                shell(&target.display().to_string())
            ));
            }
            Strategy::NgramMod => {
                let (n_match, n_min, n_max) = ngram_mod_sizes(self.s);
                self.push(&["--spec-type", "ngram-mod", "--spec-ngram-mod-n-match", &n_match.to_string()]);
                self.push(&[
                    "--spec-ngram-mod-n-min",
                    &n_min.to_string(),
                    "--spec-ngram-mod-n-max",
                    &n_max.to_string(),
                ]);
            }
        }
        Some(())
    }

    /// llama.cpp's chain for `auto`: every type listed, tried in its own fixed order (n-gram
    /// drafters before model drafters), the first that drafts drafts.
    fn auto(&mut self, draft: Option<&Path>) {
        let n = self.s.n_draft.to_string();
        let mut types = vec!["ngram-simple", "ngram-mod", "ngram-cache"];
        let model = draft.map(|d| (shell(&d.display().to_string()), head_kind(d)));
        if let Some((_, kind)) = &model {
            types.push(kind.map_or("draft-simple", |k| k.spec_type()));
        }
        self.push(&["--spec-type", &types.join(",")]);
        self.push(&["--spec-ngram-simple-size-n", &self.s.lookup_max.to_string(), "--spec-ngram-simple-size-m", &n]);
        let (n_match, n_min, n_max) = ngram_mod_sizes(self.s);
        self.push(&["--spec-ngram-mod-n-match", &n_match.to_string()]);
        self.push(&["--spec-ngram-mod-n-min", &n_min.to_string(), "--spec-ngram-mod-n-max", &n_max.to_string()]);
        if self.s.ngram_map.is_some() {
            self.push(&["-lcs", "ngram-static.bin"]);
        }
        if let Some((d, _)) = &model {
            self.push(&["-md", d, "-ngld", &ngl(self.s.draft_layers())]);
            self.push(&["--spec-draft-n-max", &n, "--spec-draft-p-min", &self.s.p_min.to_string()]);
        }
        self.notes.push(
            "llama.cpp drafts with the first of these that offers tokens, n-gram drafters first; Draftlab's auto \
         picks among them each round by expected tokens per millisecond"
                .into(),
        );
    }

    /// Where the layers go (this machine's GPU, the --rpc machines), the KV cache types and flash
    /// attention: llama-server's defaults (f16 caches, flash attention `auto`) are not spelled.
    fn placement_and_caches(&mut self) {
        self.push(&["-ngl", &ngl(self.s.gpu_layers), "-c", &self.s.n_ctx.to_string()]);
        // The same machines serve llama.cpp (the same protocol): its layers spread as ours did.
        if !self.s.rpc.is_empty() {
            self.push(&["--rpc", &shell(&self.s.rpc.join(","))]);
            if !self.s.tensor_split.is_empty() {
                let weights: Vec<String> = self.s.tensor_split.iter().map(f32::to_string).collect();
                self.push(&["--tensor-split", &weights.join(",")]);
            }
        }
        // llama-server's defaults are f16 caches and flash attention `auto`: only a change is printed.
        if self.s.cache_type != KvType::F16 {
            self.push(&["-ctk", self.s.cache_type.name(), "-ctv", self.s.cache_type.name()]);
        }
        if self.s.flash_attn != FlashAttn::Auto {
            self.push(&["-fa", self.s.flash_attn.name()]);
        }
    }
}

#[cfg(test)]
mod tests {
    use std::collections::HashMap;

    use super::*;

    fn vendored(file: &str) -> String {
        crate::testing::vendored_llama_cpp(&format!("common/{file}"))
    }

    /// Every option arg.cpp declares: each name → (removed?, accepted by llama-server?).
    fn declared(text: &str) -> HashMap<String, (bool, bool)> {
        let mut out = HashMap::new();
        for block in text.split("add_opt(").skip(1) {
            let Some(start) = block.find("common_arg(") else { continue };
            let rest = &block[start..];
            let Some(open) = rest.find('{') else { continue };
            let Some(close) = rest[open..].find('}') else { continue };
            let names: Vec<String> = rest[open + 1..open + close]
                .split(',')
                .map(|n| n.trim().trim_matches('"').to_string())
                .filter(|n| n.starts_with('-'))
                .collect();
            let removed = rest.contains("has been removed");
            // An option belongs to LLAMA_EXAMPLE_COMMON unless `set_examples` says otherwise, and
            // every tool inherits the common ones, unless `set_excludes` names it.
            let list = |call: &str| rest.find(call).map(|i| rest[i..].split(')').next().unwrap_or("").to_string());
            let server = match list(".set_examples(") {
                Some(l) => l.contains("LLAMA_EXAMPLE_SERVER") || l.contains("LLAMA_EXAMPLE_COMMON"),
                None => true,
            } && !list(".set_excludes(").is_some_and(|l| l.contains("LLAMA_EXAMPLE_SERVER"));
            for n in names {
                out.insert(n, (removed, server));
            }
        }
        out
    }

    fn every_setting() -> Vec<Settings> {
        let mut out = Vec::new();
        for strategy in Strategy::ALL {
            for adaptive in [false, true] {
                for keep_ngram_cache in [false, true] {
                    // Placement and cache options: the defaults, then every flag they print.
                    let tuned = [false, true];
                    for tuned in tuned {
                        let mut s = Settings {
                            strategy,
                            adaptive,
                            keep_ngram_cache,
                            gpu_layers: GpuLayers::Count(20),
                            ..Settings::default()
                        };
                        if tuned {
                            s.flash_attn = FlashAttn::On;
                            s.cache_type = KvType::Q8_0;
                            s.draft_cache_type = KvType::Q4_0;
                            s.draft_gpu_layers = Some(GpuLayers::Count(0));
                            s.rpc = vec!["192.168.1.20:50052".into(), "mac-studio.local:50052".into()];
                            s.tensor_split = vec![2.0, 1.5, 1.0];
                        }
                        out.push(s);
                    }
                }
            }
        }
        out
    }

    #[test]
    fn every_printed_flag_exists_in_llama_cpp() {
        let flags = declared(&vendored("arg.cpp"));
        assert!(flags.len() > 200, "arg.cpp parsed badly: {} options", flags.len());
        // The parser sees what it must: the old draft flags are declared, as removed.
        assert_eq!(flags.get("--draft-max"), Some(&(true, true)), "{:?}", flags.get("--draft-max"));
        assert_eq!(flags.get("--spec-draft-n-max").map(|f| f.0), Some(false));
        let speculative = vendored("speculative.cpp");
        let mut printed = 0;
        for s in every_setting() {
            let Some(c) = server_command_for(
                Launcher::Server,
                Path::new("/m/target model.gguf"),
                Some(Path::new("/m/draft.gguf")),
                &s,
            ) else {
                panic!("{} has a command", s.strategy);
            };
            printed += 1;
            let words: Vec<&str> = c.command.split_whitespace().collect();
            assert_eq!(words[0], "llama-server");
            for w in words.iter().filter(|w| w.starts_with('-')) {
                match flags.get(*w) {
                    None => panic!("{w} is not a llama.cpp option ({FLAGS_FROM}): {}", c.command),
                    Some((true, _)) => panic!("{w} was removed from llama.cpp: {}", c.command),
                    Some((false, false)) => panic!("llama-server does not take {w}: {}", c.command),
                    Some((false, true)) => {}
                }
            }
            // Each --spec-type value is one llama.cpp knows.
            for (i, w) in words.iter().enumerate() {
                if *w == "--spec-type" {
                    for v in words[i + 1].split(',') {
                        assert!(speculative.contains(&format!("{{\"{v}\",")), "{v} is not a llama.cpp --spec-type");
                    }
                }
            }
            let cache_differs = s.strategy == Strategy::NgramCache && s.keep_ngram_cache;
            assert_eq!(
                c.note.is_some(),
                s.adaptive
                    || cache_differs
                    || matches!(s.strategy, Strategy::PromptLookup | Strategy::NgramMap | Strategy::Auto),
                "{}",
                c.line()
            );
        }
        // Every strategy, adaptive or not, with or without a kept cache, tuned or not.
        assert_eq!(printed, 8 * Strategy::ALL.len());
    }

    #[test]
    fn commands_quote_paths_and_say_what_they_cannot_reproduce() {
        let s =
            Settings { strategy: Strategy::DraftModel, adaptive: false, n_draft: 6, p_min: 0.5, ..Settings::default() };
        let c = server_command_for(Launcher::Server, Path::new("/m/it's here.gguf"), Some(Path::new("/m/d.gguf")), &s)
            .unwrap();
        assert_eq!(
            c.command,
            "llama-server -m '/m/it'\\''s here.gguf' -md /m/d.gguf -ngld 99 --spec-type draft-simple \
             --spec-draft-n-max 6 --spec-draft-n-min 0 --spec-draft-p-min 0.5 -ngl 99 -c 4096"
        );
        assert_eq!(c.note, None);
        assert!(
            server_command_for(Launcher::Server, Path::new("/m/t.gguf"), None, &s).is_none(),
            "the draft strategy needs a draft"
        );
        // (`auto`: see auto_is_llama_cpps_chain_of_the_drafters_it_has.)
        // MTP needs no draft: llama.cpp drafts with the target's own layers; a head file is `-md`.
        let mtp = Settings { strategy: Strategy::Mtp, ..s.clone() };
        assert_eq!(
            server_command_for(Launcher::Server, Path::new("/m/q.gguf"), None, &mtp).unwrap().command,
            "llama-server -m /m/q.gguf --spec-type draft-mtp --spec-draft-n-max 6 --spec-draft-p-min 0.5 -ngl 99 -c 4096"
        );
        let head = server_command_for(Launcher::Server, Path::new("/m/g.gguf"), Some(Path::new("/m/a.gguf")), &mtp);
        assert_eq!(
            head.unwrap().command,
            "llama-server -m /m/g.gguf -md /m/a.gguf -ngld 99 --spec-type draft-mtp --spec-draft-n-max 6 \
             --spec-draft-p-min 0.5 -ngl 99 -c 4096"
        );
        // A head of its own kind, with its file; none without it.
        for (strategy, kind) in
            [(Strategy::Eagle3, "draft-eagle3"), (Strategy::Dflash, "draft-dflash"), (Strategy::Dspark, "draft-dspark")]
        {
            let h = Settings { strategy, ..s.clone() };
            let c =
                server_command_for(Launcher::Server, Path::new("/m/t.gguf"), Some(Path::new("/m/h.gguf")), &h).unwrap();
            assert!(
                c.command.contains(&format!("-md /m/h.gguf -ngld 99 --spec-type {kind} --spec-draft-n-max 6")),
                "{}",
                c.command
            );
            assert!(server_command_for(Launcher::Server, Path::new("/m/t.gguf"), None, &h).is_none());
        }
        let adaptive = Settings { adaptive: true, ..s.clone() };
        let note =
            server_command_for(Launcher::Server, Path::new("/m/t.gguf"), Some(Path::new("/m/d.gguf")), &adaptive)
                .unwrap()
                .note;
        assert!(note.unwrap().contains("no cost-aware adaptive draft length"));
        // Placement and cache options travel with the command.
        let tuned = Settings {
            flash_attn: FlashAttn::On,
            cache_type: KvType::Q8_0,
            draft_cache_type: KvType::Q4_0,
            draft_gpu_layers: Some(GpuLayers::Count(0)),
            ..s
        };
        let c = server_command_for(Launcher::Server, Path::new("/m/t.gguf"), Some(Path::new("/m/d.gguf")), &tuned)
            .unwrap()
            .command;
        assert!(c.contains("-ngld 0 --spec-type") && c.contains("-ctkd q4_0 -ctvd q4_0"), "{c}");
        assert!(c.ends_with("-ngl 99 -c 4096 -ctk q8_0 -ctv q8_0 -fa on"), "{c}");
        let far = Settings { rpc: vec!["10.0.0.2:50052".into(), "[::1]:50053".into()], ..Settings::default() };
        let c = server_command_for(
            Launcher::Server,
            Path::new("/m/t.gguf"),
            Some(Path::new("/m/d.gguf")),
            &Settings { strategy: Strategy::DraftModel, ..far },
        );
        assert!(c.unwrap().command.ends_with("-c 4096 --rpc '10.0.0.2:50052,[::1]:50053'"));
        let split =
            Settings { rpc: vec!["10.0.0.2:50052".into()], tensor_split: vec![3.0, 1.0], ..Settings::default() };
        let c = server_command_for(
            Launcher::Server,
            Path::new("/m/t.gguf"),
            None,
            &Settings { strategy: Strategy::PromptLookup, ..split },
        );
        assert!(c.unwrap().command.ends_with("--rpc 10.0.0.2:50052 --tensor-split 3,1"));
    }

    #[test]
    fn auto_is_llama_cpps_chain_of_the_drafters_it_has() {
        let t = Path::new("/m/t.gguf");
        let auto = Settings { strategy: Strategy::Auto, adaptive: false, n_draft: 6, ..Settings::default() };
        let c = server_command_for(Launcher::Server, t, None, &auto).unwrap();
        assert!(
            c.command.starts_with(
                "llama-server -m /m/t.gguf --spec-type ngram-simple,ngram-mod,ngram-cache --spec-ngram-simple-size-n"
            ),
            "{}",
            c.command
        );
        assert!(!c.command.contains("-md"), "{}", c.command);
        assert!(c.note.as_deref().is_some_and(|n| n.contains("first of these that offers tokens")), "{:?}", c.note);
        // With a draft model (a file that is no drafter head), the model drafter comes last.
        let c = server_command_for(Launcher::Server, t, Some(Path::new("/m/d.gguf")), &auto).unwrap();
        assert!(c.command.contains("--spec-type ngram-simple,ngram-mod,ngram-cache,draft-simple "), "{}", c.command);
        assert!(c.command.contains("-md /m/d.gguf -ngld 99 --spec-draft-n-max 6"), "{}", c.command);
    }

    #[test]
    fn ngram_commands_reproduce_what_llama_cpp_does_and_say_what_it_cannot() {
        let t = Path::new("/m/t.gguf");
        // ngram-cache: no -lcd (llama-server aborts on a missing file and never writes it), no
        // --spec-draft-n-max (its length is fixed at 8): said after `#` instead.
        let cache = Settings { strategy: Strategy::NgramCache, adaptive: false, n_draft: 8, ..Settings::default() };
        let c = server_command_for(Launcher::Server, t, None, &cache).unwrap();
        assert_eq!(c.command, "llama-server -m /m/t.gguf --spec-type ngram-cache -ngl 99 -c 4096");
        assert_eq!(c.note, None);
        let kept = Settings { keep_ngram_cache: true, n_draft: 12, ..cache.clone() };
        let line = server_command_for(Launcher::Server, t, None, &kept).unwrap().line();
        assert!(!line.contains("-lcd") && !line.contains("--spec-draft-n-max"), "{line}");
        assert!(line.contains("# llama.cpp's ngram-cache drafts up to 8 tokens"), "{line}");
        assert!(line.contains("does not keep its n-gram cache"), "{line}");
        // ngram-mod: the sizes Draftlab used.
        let m = Settings { strategy: Strategy::NgramMod, adaptive: false, n_draft: 16, ..Settings::default() };
        assert_eq!(
            server_command_for(Launcher::Server, t, None, &m).unwrap().command,
            "llama-server -m /m/t.gguf --spec-type ngram-mod --spec-ngram-mod-n-match 24 --spec-ngram-mod-n-min 12 \
             --spec-ngram-mod-n-max 16 -ngl 99 -c 4096"
        );
        // The one `llama` executable, or neither found.
        let u = server_command_for(Launcher::Unified, t, None, &cache).unwrap();
        assert!(u.command.starts_with("llama serve -m /m/t.gguf --spec-type ngram-cache"), "{}", u.command);
        let none = server_command_for(Launcher::Unknown, t, None, &cache).unwrap();
        assert!(none.command.starts_with("llama-server "));
        assert!(none.line().contains("`llama serve`"), "{}", none.line());
    }

    #[test]
    fn the_launcher_is_the_one_on_the_path() {
        let dir = tempfile::tempdir().unwrap();
        let path = std::env::join_paths([dir.path()]).unwrap();
        assert_eq!(Launcher::from_path(Some(&path)), Launcher::Unknown);
        std::fs::write(dir.path().join("llama"), "").unwrap();
        assert_eq!(Launcher::from_path(Some(&path)), Launcher::Unified);
        std::fs::write(dir.path().join("llama-server"), "").unwrap();
        assert_eq!(Launcher::from_path(Some(&path)), Launcher::Server);
        assert_eq!(Launcher::from_path(None), Launcher::Unknown);
    }
}
