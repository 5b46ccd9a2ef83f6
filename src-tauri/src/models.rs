//! The Models view's backend: the built-in catalog with what fits this machine, and downloads into
//! the Hugging Face cache (the GGUF files already on disk are the worker's: `Workers::discover`).
//! Downloads run in the app process (they never touch llama.cpp), one cancel flag each.

use std::collections::HashMap;
use std::path::PathBuf;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};

use draftlab_core::files::catalog::{self, BundleDrafter, CatalogModel, Fit};
use draftlab_core::files::hub::{self, DownloadEvent, HubOptions};
use draftlab_core::job::Job;
use draftlab_core::serving::client::Workers;
use serde::Serialize;

use draftlab_core::ErrorCode;

use crate::error::ApiError;

#[derive(Debug, Clone, Serialize, ts_rs::TS)]
pub struct CatalogEntry {
    pub model: CatalogModel,
    pub fit: Fit,
    /// Everything in the catalog that drafts for it, best first (its own MTP layers, drafters made
    /// for it, draft models).
    pub bundle: Vec<BundleDrafter>,
    /// What *With drafter* fetches: the first of the bundle that fits beside it on this machine.
    pub drafter: Option<BundleDrafter>,
    /// Why there is none (nothing drafts for it, or nothing fits beside it).
    pub no_drafter: Option<String>,
}

#[derive(Debug, Clone, Serialize, ts_rs::TS)]
pub struct CatalogView {
    pub models: Vec<CatalogEntry>,
    /// What the fit badges are judged against (bytes), and why it is that number: the GPU's
    /// working set on Apple Silicon, memory free now elsewhere.
    pub limit: u64,
    pub limit_reason: String,
    /// The context the badges are for.
    pub context: u64,
}

/// The catalog with its fit badges, for the memory the engine worker reads (ggml's GPU device).
pub fn catalog_view(workers: &Workers) -> Result<CatalogView, ApiError> {
    let models = catalog::models()?;
    let mem = workers.memory()?;
    let fits = catalog::fit(&models, &mem);
    let (limit, limit_reason) = catalog::limit(&mem);
    Ok(CatalogView {
        models: models
            .iter()
            .zip(fits)
            .map(|(model, fit)| {
                let best = (model.drafter.is_none()).then(|| catalog::best_drafter_in(model, &models, None, &mem));
                let (drafter, no_drafter) = match best {
                    Some(Ok(b)) => (Some(b), None),
                    // The reason alone (the page says "no drafter:").
                    Some(Err(draftlab_core::Error::InvalidSettings(why))) => (None, Some(why)),
                    Some(Err(e)) => (None, Some(e.to_string())),
                    None => (None, None),
                };
                CatalogEntry { bundle: catalog::bundle(model, &models), model: model.clone(), fit, drafter, no_drafter }
            })
            .collect(),
        limit,
        limit_reason,
        context: catalog::FIT_CONTEXT,
    })
}

/// Cancel flags of the downloads in progress, by `repo/file`.
#[derive(Default)]
pub struct Downloads(Mutex<HashMap<String, Arc<AtomicBool>>>);

impl Downloads {
    fn start(&self, key: &str) -> Result<Arc<AtomicBool>, ApiError> {
        let mut m = self.0.lock().unwrap_or_else(|e| e.into_inner());
        if m.contains_key(key) {
            return Err(ApiError::new(
                ErrorCode::Busy,
                format!("{key} is already downloading"),
                "Wait for it, or cancel it.",
            ));
        }
        let flag = Arc::new(AtomicBool::new(false));
        m.insert(key.to_string(), Arc::clone(&flag));
        Ok(flag)
    }

    fn finish(&self, key: &str) {
        self.0.lock().unwrap_or_else(|e| e.into_inner()).remove(key);
    }

    pub fn cancel(&self, key: &str) -> bool {
        self.0.lock().unwrap_or_else(|e| e.into_inner()).get(key).map(|f| f.store(true, Ordering::Relaxed)).is_some()
    }
}

/// Downloads a file (or finds it in the cache), streaming progress; returns its path.
pub fn download(
    downloads: &Downloads,
    opts: &HubOptions,
    repo: &str,
    file: &str,
    send: &mut dyn FnMut(DownloadEvent),
) -> Result<PathBuf, ApiError> {
    let key = format!("{repo}/{file}");
    // A file the catalog lists comes from the revision it was checked against, with its hash.
    let pin = catalog::pin_of(repo, file)?;
    let cancel = downloads.start(&key)?;
    let r = hub::download_pinned(opts, repo, file, &pin, &mut Job::new(&cancel, send));
    downloads.finish(&key);
    Ok(r.map_err(|e| catalog::name_missing(repo, file, e))?)
}
