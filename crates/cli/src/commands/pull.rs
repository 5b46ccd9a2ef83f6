//! `draftlab pull`: download a model into the Hugging Face cache.

use std::io::IsTerminal;
use std::process::ExitCode;
use std::sync::atomic::AtomicBool;

use draftlab_engine::files::{catalog, hub};
use draftlab_engine::job::Job;
use draftlab_engine::Error;

use crate::print::gib;

pub(crate) fn pull_cmd(what: &[String], quant: Option<&str>, with_draft: Option<&str>) -> anyhow::Result<ExitCode> {
    let jobs = downloads(what, quant, with_draft)?;
    let opts = hub::HubOptions::default();
    let cancel = AtomicBool::new(false);
    let tty = std::io::stderr().is_terminal();
    for (repo, file) in jobs {
        let mut shown = Shown { tty, last_line: std::time::Instant::now() };
        // A file the catalog lists comes from the revision it was checked against, with its hash.
        let pin = catalog::pin_of(&repo, &file)?;
        let path = hub::download_pinned(
            &opts,
            &repo,
            &file,
            &pin,
            &mut Job::new(&cancel, &mut |e| shown.show(e, &repo, &file)),
        )
        .map_err(|e| catalog::name_missing(&repo, &file, e))?;
        println!("{}", path.display());
    }
    Ok(ExitCode::SUCCESS)
}

/// The files to download: a catalog id's file (and its best drafter's, with `--with-draft`), or a
/// repo and a file.
fn downloads(what: &[String], quant: Option<&str>, with_draft: Option<&str>) -> anyhow::Result<Vec<(String, String)>> {
    let mut jobs: Vec<(String, String)> = Vec::new();
    match what {
        [id] => {
            let m = catalog::find(id)?;
            jobs.push((m.repo.clone(), m.file(quant)?.file.clone()));
            if let Some(kind) = with_draft {
                let want = Some(kind).filter(|k| *k != "best");
                let mem = draftlab_engine::decoding::llama::memory_info();
                let best = catalog::best_drafter(&m, want, &mem)?;
                if best.separate {
                    let d = catalog::find(&best.id)?;
                    eprintln!("pull: {} drafts for {} (--strategy {})", d.id, m.id, best.strategy);
                    jobs.push((d.repo.clone(), d.file(quant).or_else(|_| d.file(None))?.file.clone()));
                } else {
                    eprintln!(
                        "pull: {} drafts for itself with its own MTP layers (--strategy mtp): nothing more to fetch",
                        m.id
                    );
                }
            }
        }
        [repo, file] => {
            if quant.is_some() || with_draft.is_some() {
                return Err(Error::InvalidSettings("--quant and --with-draft are for catalog ids".into()).into());
            }
            jobs.push((repo.clone(), file.clone()));
        }
        _ => unreachable!("clap takes one or two values"),
    }
    Ok(jobs)
}

/// A download's progress on stderr: one line rewritten on a terminal, a line every 5 s elsewhere.
struct Shown {
    tty: bool,
    last_line: std::time::Instant,
}

impl Shown {
    fn show(&mut self, e: hub::DownloadEvent, repo: &str, file: &str) {
        match e {
            hub::DownloadEvent::Started { total, resumed_from, .. } => {
                eprintln!(
                    "pull: {repo}/{file} ({}){}",
                    gib(total),
                    if resumed_from > 0 { format!(", resuming at {}", gib(resumed_from)) } else { String::new() }
                );
            }
            hub::DownloadEvent::Progress { downloaded, total, bytes_per_s, eta_s } => {
                let pct = if total > 0 { 100.0 * downloaded as f64 / total as f64 } else { 100.0 };
                let line = format!(
                    "  {pct:5.1} %  {} of {}  {:.1} MB/s  ETA {:.0} s",
                    gib(downloaded),
                    gib(total),
                    bytes_per_s / 1e6,
                    eta_s
                );
                if self.tty {
                    eprint!("\r{line}   ");
                } else if self.last_line.elapsed().as_secs() >= 5 || downloaded == total {
                    eprintln!("{line}");
                    self.last_line = std::time::Instant::now();
                }
            }
            hub::DownloadEvent::Retrying { attempt, of, reason, wait_s } => {
                if self.tty {
                    eprintln!();
                }
                eprintln!("  {reason}: retrying from where it stopped in {wait_s:.0} s ({attempt} of {of})");
            }
            hub::DownloadEvent::Verifying => {
                if self.tty {
                    eprintln!();
                }
                eprintln!("  checking the SHA-256…");
            }
            hub::DownloadEvent::Done { already: true, .. } => {
                eprintln!("pull: {repo}/{file} is already in the cache")
            }
            hub::DownloadEvent::Done { .. } => {}
        }
    }
}
