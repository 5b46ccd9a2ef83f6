//! `draftlab pull`: download a model into the Hugging Face cache.

use std::io::IsTerminal;
use std::process::ExitCode;
use std::sync::atomic::AtomicBool;

use draftlab_engine::files::{catalog, hub};
use draftlab_engine::job::Job;
use draftlab_engine::Error;

use crate::print::gib;

pub(crate) fn pull_cmd(what: &[String], quant: Option<&str>, with_draft: bool) -> anyhow::Result<ExitCode> {
    let mut jobs: Vec<(String, String)> = Vec::new();
    match what {
        [id] => {
            let m = catalog::find(id)?;
            jobs.push((m.repo.clone(), m.file(quant)?.file.clone()));
            if with_draft {
                let Some(d) = m.drafts.first() else {
                    return Err(Error::InvalidSettings(format!("{} has no recommended draft", m.id)).into());
                };
                let d = catalog::find(d)?;
                jobs.push((d.repo.clone(), d.file(quant).or_else(|_| d.file(None))?.file.clone()));
            }
        }
        [repo, file] => {
            if quant.is_some() || with_draft {
                return Err(Error::InvalidSettings("--quant and --with-draft are for catalog ids".into()).into());
            }
            jobs.push((repo.clone(), file.clone()));
        }
        _ => unreachable!("clap takes one or two values"),
    }
    let opts = hub::HubOptions::default();
    let cancel = AtomicBool::new(false);
    let tty = std::io::stderr().is_terminal();
    for (repo, file) in jobs {
        let mut last_line = std::time::Instant::now();
        let path = hub::download(
            &opts,
            &repo,
            &file,
            &mut Job::new(&cancel, &mut |e| match e {
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
                    if tty {
                        eprint!("\r{line}   ");
                    } else if last_line.elapsed().as_secs() >= 5 || downloaded == total {
                        eprintln!("{line}");
                        last_line = std::time::Instant::now();
                    }
                }
                hub::DownloadEvent::Retrying { attempt, of, reason, wait_s } => {
                    if tty {
                        eprintln!();
                    }
                    eprintln!("  {reason}: retrying from where it stopped in {wait_s:.0} s ({attempt} of {of})");
                }
                hub::DownloadEvent::Verifying => {
                    if tty {
                        eprintln!();
                    }
                    eprintln!("  checking the SHA-256…");
                }
                hub::DownloadEvent::Done { already: true, .. } => {
                    eprintln!("pull: {repo}/{file} is already in the cache")
                }
                hub::DownloadEvent::Done { .. } => {}
            }),
        )
        .map_err(|e| catalog::name_missing(&repo, &file, e))?;
        println!("{}", path.display());
    }
    Ok(ExitCode::SUCCESS)
}
