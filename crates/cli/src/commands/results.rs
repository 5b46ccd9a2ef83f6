//! `draftlab chart` and `draftlab export`: charts and CSV/JSON from a results file.

use std::path::PathBuf;
use std::process::ExitCode;

use draftlab_engine::measuring::charts;
use draftlab_engine::measuring::results::Results;
use draftlab_engine::paths::write_atomically;
use draftlab_engine::Error;

pub(crate) fn chart_cmd(
    results: PathBuf,
    kind: &str,
    out: PathBuf,
    width: u32,
    height: u32,
) -> anyhow::Result<ExitCode> {
    if !charts::Chart::KINDS.contains(&kind) {
        return Err(Error::InvalidSettings(format!(
            "--kind must be one of {}, not {kind:?}",
            charts::Chart::KINDS.join(", ")
        ))
        .into());
    }
    let chart = Results::load(&results)?.chart(kind)?;
    charts::save(&chart, &out, width, height)?;
    println!("{}", out.display());
    Ok(ExitCode::SUCCESS)
}

pub(crate) fn export_cmd(results: PathBuf, out: PathBuf) -> anyhow::Result<ExitCode> {
    let r = Results::load(&results)?;
    let bytes = match out.extension().and_then(|e| e.to_str()).map(str::to_ascii_lowercase).as_deref() {
        Some("csv") => r.csv().into_bytes(),
        Some("json") => r.json()?.into_bytes(),
        _ => return Err(Error::InvalidSettings(format!("{}: export writes .csv or .json files", out.display())).into()),
    };
    write_atomically(&out, &bytes)?;
    println!("{}", out.display());
    Ok(ExitCode::SUCCESS)
}
