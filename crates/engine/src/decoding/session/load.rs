//! Loading a session: the pair checked by the doctor, the strategy held to the draft file it
//! was given (a drafter file for its own strategy, a draft model for `draft`), then the models.

use std::cell::RefCell;
use std::collections::HashMap;
use std::path::Path;

use super::Session;
use crate::decoding::draft::cross::PromptPairs;
use crate::decoding::draft::Strategy;
use crate::decoding::llama::{Model, MtpLayers};
use crate::decoding::settings::{Mode, ValidSettings};
use crate::decoding::speculative::NativeKind;
use crate::error::{Error, Result};
use crate::files::doctor::Pairing;
use crate::files::gguf::{DrafterKind, GgufFile};
use crate::setting::Setting;

/// A strategy that runs a drafter file (`eagle3`, `dflash`, `dspark`) without one.
pub(super) fn no_head(strategy: Strategy, kind: DrafterKind) -> Error {
    Error::InvalidSetting {
        setting: Setting::Draft,
        reason: format!(
            "is needed by the {strategy} strategy: give {} made for the target (--draft FILE)",
            kind.a_label()
        ),
    }
}

/// Whether a drafter file of `kind` suits `strategy`, and what to do when it does not.
fn head_fits(strategy: Strategy, kind: DrafterKind, path: &Path) -> Result<()> {
    let name = path.file_name().map_or_else(|| path.display().to_string(), |n| n.to_string_lossy().into_owned());
    let needs = Strategy::for_head(kind);
    match strategy {
        Strategy::Auto => Ok(()),
        s if s == needs => Ok(()),
        Strategy::DraftModel => Err(Error::Incompatible {
            reason: format!(
                "{name} is {}, not a draft model: it drafts from the target's hidden states. Use `--strategy {needs}` \
                 (llama.cpp's `--spec-type {}`), or give a draft model of the target's family",
                kind.a_label(),
                kind.spec_type()
            ),
        }),
        s => Err(Error::Incompatible {
            reason: format!(
                "{name} is {}, which the {s} strategy does not run: use `--strategy {needs}`",
                kind.a_label()
            ),
        }),
    }
}

/// llama.cpp's drafter type for a drafter file.
pub(super) fn native_kind(kind: DrafterKind) -> NativeKind {
    match kind {
        DrafterKind::MtpHead => NativeKind::DraftMtp,
        DrafterKind::Eagle3 => NativeKind::DraftEagle3,
        DrafterKind::Dflash => NativeKind::DraftDflash,
        DrafterKind::Dspark => NativeKind::DraftDspark,
    }
}

/// The draft strategy without a draft model.
pub(super) fn no_draft() -> Error {
    Error::InvalidSetting {
        setting: Setting::Draft,
        reason: "is needed by the draft strategy: give a draft model (or use the lookup or auto strategy)".into(),
    }
}

impl Session {
    /// Checks the pair with the doctor (an incompatible vocabulary or a pair that cannot fit in
    /// memory is an error, before anything loads), loads the target and — when these settings
    /// draft with a model — the draft, and loads what the strategy needs besides (the n-gram map),
    /// so a bad map fails before any generation.
    pub fn load(target: &Path, draft: Option<&Path>, settings: ValidSettings) -> Result<Session> {
        let speculative = settings.allows(Mode::Speculative);
        if speculative && settings.strategy == Strategy::DraftModel && draft.is_none() {
            return Err(no_draft());
        }
        if let (true, None, Some(kind)) = (speculative, draft, settings.strategy.head_kind()) {
            if kind != DrafterKind::MtpHead {
                return Err(no_head(settings.strategy, kind));
            }
        }
        // What the draft file is decides what it is for: `mtp` takes an MTP head and leaves a
        // draft model unused (its own layers draft), as it always did.
        let head_file = match draft.filter(|_| speculative && settings.strategy == Strategy::Mtp) {
            Some(p) => GgufFile::open(p)?.drafter_kind().is_some(),
            None => false,
        };
        let draft = draft
            .filter(|_| speculative && settings.strategy.loads_draft())
            .filter(|_| settings.strategy != Strategy::Mtp || head_file);
        let dx = Self::check(target, draft, &settings)?;
        let cross = dx.pairing == Some(Pairing::CrossVocabulary);
        let head = dx.draft.as_ref().and_then(|d| d.drafter);
        if let (Some(kind), Some(path)) = (head, draft) {
            head_fits(settings.strategy, kind, path)?;
        } else if let (Some(kind), Some(path)) = (settings.strategy.head_kind(), draft) {
            // A draft model where a drafter file belongs.
            return Err(Error::Incompatible {
                reason: format!(
                    "{} is a model, not {}: use `--strategy draft` for a draft model, or give the {} made for the target",
                    path.display(),
                    kind.a_label(),
                    kind.label()
                ),
            });
        }
        // A target with MTP layers keeps them loaded for speculative sessions (about one layer's
        // memory, counted in the file's size): any run may then choose the `mtp` strategy.
        let own_mtp = settings.drafts_with_mtp(Mode::Speculative) && head.is_none();
        let mtp = match (own_mtp, settings.allows(Mode::Speculative)) {
            (true, _) => MtpLayers::Required,
            (false, true) => MtpLayers::IfPresent,
            (false, false) => MtpLayers::Skip,
        };
        // The target's layers spread over other machines too (`rpc`); the draft stays here.
        // (The check above set the split, so the layers go where it said.)
        let remote = match settings.rpc.is_empty() {
            true => Vec::new(),
            false => crate::decoding::rpc::devices(&settings.rpc)?,
        };
        let target = Model::load_for(target, settings.gpu_layers, mtp, &remote)?;
        let draft = draft.map(|d| Model::load(d, settings.draft_layers())).transpose()?;
        let session = Session {
            target,
            draft,
            settings,
            costs: RefCell::new(HashMap::new()),
            maps: RefCell::new(HashMap::new()),
            cross,
            prompts: PromptPairs::default(),
            head,
        };
        session.prepare(&session.settings)?;
        Ok(session)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A drafter file runs with its own strategy (or `auto`); any other says which to use.
    #[test]
    fn a_drafter_file_fits_its_own_strategy_and_says_which_otherwise() {
        let file = Path::new("/models/qwen3-eagle3.gguf");
        assert!(head_fits(Strategy::Eagle3, DrafterKind::Eagle3, file).is_ok());
        assert!(head_fits(Strategy::Auto, DrafterKind::Dflash, file).is_ok());
        let e = head_fits(Strategy::DraftModel, DrafterKind::Eagle3, file).unwrap_err().to_string();
        assert!(e.contains("qwen3-eagle3.gguf is an EAGLE-3 head, not a draft model"), "{e}");
        assert!(e.contains("--strategy eagle3") && e.contains("--spec-type draft-eagle3"), "{e}");
        let e = head_fits(Strategy::Dflash, DrafterKind::Dspark, file).unwrap_err().to_string();
        assert!(e.contains("which the dflash strategy does not run: use `--strategy dspark`"), "{e}");
        for kind in DrafterKind::ALL {
            assert_eq!(Strategy::for_head(kind).head_kind(), Some(kind), "{kind:?}");
        }
        assert_eq!(native_kind(DrafterKind::MtpHead), NativeKind::DraftMtp);
        assert_eq!(native_kind(DrafterKind::Dspark), NativeKind::DraftDspark);
    }
}
