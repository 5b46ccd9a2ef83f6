//! The drafters a session's speculative runs draft with: n-gram ways, the draft model, the
//! target's own MTP layers or head.

use super::*;

impl Session {
    /// The drafters of a speculative run, in the order `auto` considers them; `lent.model` drafts
    /// with the draft model (made by [`Session::model_drafter`], or kept warm by a conversation),
    /// `lent.ngram_mod` is a conversation's ngram-mod (else a fresh one).
    pub(super) fn drafters<'a>(
        &'a self,
        s: &ValidSettings,
        notes: &mut Vec<String>,
        lent: Lent<'a>,
        costs: Option<&Costs>,
        fed: Option<&Costs>,
    ) -> Result<Vec<Box<dyn Drafter + 'a>>> {
        let Lent { model, ngram_mod, .. } = lent;
        let ngram_mod = || ngram_mod.map_or_else(|| Self::ngram_mod(s), Ok);
        let mut out: Vec<Box<dyn Drafter + 'a>> = Vec::new();
        match s.strategy {
            Strategy::DraftModel => out.push(model.ok_or_else(no_draft)?),
            Strategy::Mtp | Strategy::Eagle3 | Strategy::Dflash | Strategy::Dspark => {
                out.push(self.self_drafter(s.strategy, s, costs, fed));
            }
            Strategy::PromptLookup => out.push(Box::new(PromptLookup::new(s.lookup_min, s.lookup_max)?)),
            Strategy::NgramMod => out.push(ngram_mod()?),
            Strategy::NgramCache => out.push(self.ngram_cache(s, notes)?),
            Strategy::NgramMap => out.push(self.ngram_map(s)?.ok_or_else(|| Error::InvalidSetting {
                setting: Setting::NgramMap,
                reason: "is needed by the ngram-map strategy".into(),
            })?),
            Strategy::Auto => {
                out.push(Box::new(PromptLookup::new(s.lookup_min, s.lookup_max)?));
                out.push(self.ngram_cache(s, notes)?);
                if let Some(m) = self.ngram_map(s)? {
                    out.push(m);
                }
                out.push(ngram_mod()?);
                // A drafter file given to auto drafts too (inside the target's context).
                if let Some(kind) = self.head {
                    out.push(self.self_drafter(Strategy::for_head(kind), s, costs, fed));
                }
                out.extend(model);
            }
        }
        Ok(out)
    }

    /// A drafter that asks the target's context for llama.cpp's drafts (its MTP layers, or a head).
    pub(super) fn self_drafter<'a>(
        &self,
        strategy: Strategy,
        s: &ValidSettings,
        costs: Option<&Costs>,
        fed: Option<&Costs>,
    ) -> Box<dyn Drafter + 'a> {
        // Until a call of this run is timed: a call as measured with the feed (see
        // `Session::fed_costs`), else an MTP block or a head taken as about one block of the
        // target's (plus its output layer), run once per drafted token, up to the maximum.
        let layers = self.target.summary.n_layer.unwrap_or(1).max(1) as f64;
        let step = costs.map_or(0.0, |c| c.verify(1));
        let estimate = fed.map(|f| f.draft_token_ms).filter(|&ms| ms > 0.0);
        Box::new(MtpDrafter::for_strategy(strategy, estimate.unwrap_or(step * 2.0 / layers * s.n_draft as f64)))
    }

    /// llama.cpp's `ngram-mod` drafter, at the sizes these settings give it.
    pub(super) fn ngram_mod<'a>(s: &ValidSettings) -> Result<Box<dyn Drafter + 'a>> {
        let (n_match, n_min, n_max) = crate::decoding::settings::ngram_mod_sizes(s);
        Ok(Box::new(NgramMod::new(n_match, n_min, n_max)?))
    }

    /// A drafter on the draft model (a fresh context), when these settings draft with one.
    pub(super) fn model_drafter(&self, s: &ValidSettings) -> Result<Option<Box<dyn Drafter + '_>>> {
        Ok(self.model_drafter_of(s)?.map(|d| Box::new(d) as Box<dyn Drafter + '_>))
    }

    /// The draft model's drafter on a fresh context, when these settings draft with one (a
    /// conversation keeps it for its next turn).
    pub fn model_drafter_of(&self, s: &ValidSettings) -> Result<Option<ModelDrafter<'_>>> {
        let Some(draft) = self.draft.as_ref().filter(|_| self.drafts_with_model(s)) else { return Ok(None) };
        let dctx = draft.context_with(s.n_ctx, s.n_batch, s.threads, s.draft_context())?;
        Ok(Some(match self.cross {
            true => ModelDrafter::across(dctx, s.p_min, Translator::new(&self.target, draft, &self.prompts)),
            false => ModelDrafter::new(dctx, s.p_min, s.sampling),
        }))
    }

    pub(super) fn ngram_cache(&self, s: &ValidSettings, notes: &mut Vec<String>) -> Result<Box<dyn Drafter + '_>> {
        if !s.keep_ngram_cache {
            return Ok(Box::new(NgramCache::new(s.lookup_min, s.lookup_max)?));
        }
        let vocab = &self.target.summary.vocab;
        let header = NgramHeader {
            vocab_fingerprint: vocab.fingerprint.clone(),
            vocab_size: vocab.size,
            model: self.target.id.name.clone(),
            ..Default::default()
        };
        let path = crate::paths::ngram_cache_file(&vocab.fingerprint, s.lookup_min, s.lookup_max);
        let (cache, warning) = NgramCache::persistent(s.lookup_min, s.lookup_max, path, header)?;
        notes.extend(warning);
        Ok(Box::new(cache))
    }

    /// The map of the `ngram_map` setting, loaded once per path and checked against the target's
    /// vocabulary.
    pub(super) fn ngram_map(&self, s: &ValidSettings) -> Result<Option<Box<dyn Drafter + '_>>> {
        let Some(path) = s.ngram_map.as_ref() else { return Ok(None) };
        if let Some(t) = self.maps.borrow().get(path) {
            return Ok(Some(Box::new(NgramMap::new(Arc::clone(t)))));
        }
        let (table, _) = NgramMap::load(path, &self.target)?;
        let table = Arc::new(table);
        self.maps.borrow_mut().insert(path.clone(), Arc::clone(&table));
        Ok(Some(Box::new(NgramMap::new(table))))
    }
}
