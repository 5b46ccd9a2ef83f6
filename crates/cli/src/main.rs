//! `draftlab`: the headless command line over the Draftlab engine.

mod args;
mod commands;
mod print;

use std::io::Write;
use std::process::ExitCode;

use clap::Parser;
use draftlab_engine::decoding::draft::ngram_map::BuildOptions;
use draftlab_engine::Error;

use crate::args::{Cli, Command, NgramCommand};
use crate::commands::{
    bench_cmd, chart_cmd, doctor_cmd, drafters_cmd, export_cmd, inspect, models_cmd, ngram_build, ngram_info, pull_cmd,
    run_cmd, serve_cmd, sweep_cmd, tune_cmd,
};

fn main() -> ExitCode {
    // On a CPU with AVX-512, the build for it, when it is installed beside this one; on Linux,
    // with the weights in huge pages from the start.
    let args: Vec<_> = std::env::args_os().skip(1).collect();
    draftlab_engine::serving::variant::hand_over(args.clone(), args);
    let cli = Cli::parse();
    match run(cli) {
        Ok(code) => code,
        Err(e) => {
            let mut out = std::io::stderr().lock();
            // Engine messages name settings; the CLI names the flag that sets them.
            match e.downcast_ref::<Error>() {
                Some(Error::InvalidSetting { setting, reason }) => {
                    let flag = setting.flag().unwrap_or(setting.name());
                    let _ = writeln!(out, "error: invalid setting: {flag} {}", print::clean(reason));
                }
                _ => {
                    let _ = writeln!(out, "error: {}", print::clean(&e.to_string()));
                }
            }
            if let Some(err) = e.downcast_ref::<Error>() {
                let _ = writeln!(out, "hint: {}", print::clean(err.hint()));
            } else if let Some(info) = e.downcast_ref::<draftlab_engine::error::ErrorInfo>() {
                if !info.hint.is_empty() {
                    let _ = writeln!(out, "hint: {}", print::clean(&info.hint));
                }
            }
            ExitCode::from(2)
        }
    }
}

fn run(cli: Cli) -> anyhow::Result<ExitCode> {
    // An abort in llama.cpp (a remote machine that stopped answering) says why first.
    draftlab_engine::decoding::rpc::explain_aborts();
    if cli.verbose {
        draftlab_engine::decoding::llama::log_to_stderr(true);
    }
    match cli.command {
        Command::Inspect { file, json } => inspect(file, json),
        Command::Doctor {
            target,
            draft,
            ctx,
            cache_type,
            cache_type_draft,
            gpu_layers,
            gpu_layers_draft,
            rpc,
            tensor_split,
            json,
        } => doctor_cmd(
            target,
            draft,
            ctx,
            (&cache_type, &cache_type_draft),
            (&gpu_layers, gpu_layers_draft.as_deref()),
            (&rpc, &tensor_split),
            json,
        ),
        Command::Run(args) => run_cmd(args),
        Command::Bench { model, reps, warmup, json } => bench_cmd(model, reps, warmup, json),
        Command::Ngram(NgramCommand::Build { model, out, min_ngram, max_ngram, min_count, inputs }) => {
            ngram_build(model, out, inputs, BuildOptions { min_ngram, max_ngram, min_count, ..Default::default() })
        }
        Command::Ngram(NgramCommand::Info { file, json }) => ngram_info(file, json),
        Command::Sweep(args) => sweep_cmd(args),
        Command::Tune(args) => tune_cmd(args),
        Command::Chart { results, kind, out, width, height } => chart_cmd(results, &kind, out, width, height),
        Command::Export { results, out } => export_cmd(results, out),
        Command::Models { folder, catalog, on_disk, json } => models_cmd(&folder, !on_disk, !catalog, json),
        Command::Drafters { target, folder, json } => drafters_cmd(&target, &folder, json),
        Command::Pull { what, quant, with_draft } => pull_cmd(&what, quant.as_deref(), with_draft.as_deref()),
        Command::Serve(args) => serve_cmd(args),
        Command::RpcServer { host, port, threads, mem } => {
            let mem = match mem {
                Some(g) if !(g.is_finite() && g > 0.0 && g < 1e6) => {
                    anyhow::bail!("--mem is {g}, but must be a number of GiB above 0, e.g. --mem 24")
                }
                Some(g) => Some((g * f64::from(1u32 << 30)) as u64),
                None => None,
            };
            let loopback = host == "localhost" || host.parse::<std::net::IpAddr>().is_ok_and(|a| a.is_loopback());
            if !loopback {
                eprintln!(
                    "warning: listening on {host}: llama.cpp's RPC server has no authentication or encryption, and \
                     anyone who can reach port {port} can read and write the memory it gives out and send it tensors \
                     and graphs to run; a malicious client may run code on this machine. Use it only on a network \
                     where you trust every machine, never on a public or shared one."
                );
            }
            let threads = threads.unwrap_or(draftlab_engine::decoding::settings::Settings::default().threads);
            draftlab_engine::decoding::rpc::serve(&host, port, threads, mem)?;
            Ok(ExitCode::SUCCESS)
        }
        Command::Worker => {
            draftlab_engine::serving::worker::serve_stdio();
            Ok(ExitCode::SUCCESS)
        }
    }
}
