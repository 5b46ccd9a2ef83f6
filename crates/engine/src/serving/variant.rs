//! CPU variants of the engine, chosen at run time, as llama.cpp's own releases choose among their
//! CPU backends: on x86-64 Linux the package carries, beside the plain build (AVX2, what every
//! x86-64 CPU of the last decade runs), a build of the command line for AVX-512 CPUs
//! (`draftlab-avx512`: x86-64-v4 with VNNI and VBMI, the Ice Lake, Sapphire Rapids and Zen 4
//! generation and later; decoding 1.04–1.13× faster on such a CPU, see docs/cli.md). A plain build
//! hands its process over to it when the CPU has everything it was compiled for, so a run, a
//! server or the app's engine worker computes with the instructions the CPU has. Nothing is chosen
//! on other systems (a Mac's build is for its own chips).

use std::ffi::OsString;
use std::path::{Path, PathBuf};

/// The AVX-512 build's file name, beside the executable that hands over to it.
pub const AVX512_EXE: &str = "draftlab-avx512";

/// Set to `off`, every build runs as it is (to compare the two, or if the variant misbehaves).
pub const ENV: &str = "DRAFTLAB_CPU_VARIANT";

/// What the AVX-512 build was compiled for (`-C target-cpu=x86-64-v4 -C
/// target-feature=+avx512vnni,+avx512vbmi`, llama.cpp's C and C++ with the same `-march`): each
/// must be there, with the operating system's support for its registers.
#[cfg(all(target_os = "linux", target_arch = "x86_64"))]
fn cpu_runs_avx512_build() -> bool {
    // x86-64-v3 …
    std::arch::is_x86_feature_detected!("avx2")
        && std::arch::is_x86_feature_detected!("fma")
        && std::arch::is_x86_feature_detected!("bmi1")
        && std::arch::is_x86_feature_detected!("bmi2")
        && std::arch::is_x86_feature_detected!("f16c")
        && std::arch::is_x86_feature_detected!("lzcnt")
        && std::arch::is_x86_feature_detected!("movbe")
        && std::arch::is_x86_feature_detected!("popcnt")
        // … v4 …
        && std::arch::is_x86_feature_detected!("avx512f")
        && std::arch::is_x86_feature_detected!("avx512bw")
        && std::arch::is_x86_feature_detected!("avx512cd")
        && std::arch::is_x86_feature_detected!("avx512dq")
        && std::arch::is_x86_feature_detected!("avx512vl")
        // … and the two more ggml's kernels use.
        && std::arch::is_x86_feature_detected!("avx512vnni")
        && std::arch::is_x86_feature_detected!("avx512vbmi")
}

#[cfg(not(all(target_os = "linux", target_arch = "x86_64")))]
fn cpu_runs_avx512_build() -> bool {
    false
}

/// The build this process is: `avx512` when compiled for it, else `plain`.
pub use draftlab_core::machine::cpu_build as this_build;

/// The AVX-512 build beside `exe` that this process would hand over to, if any: on x86-64 Linux,
/// from a plain build, on a CPU that runs it, unless [`ENV`] is `off`.
pub fn better_build(exe: &Path) -> Option<PathBuf> {
    if this_build() != "plain" || std::env::var_os(ENV).is_some_and(|v| v == "off") || !cpu_runs_avx512_build() {
        return None;
    }
    let variant = exe.parent()?.join(AVX512_EXE);
    variant.is_file().then_some(variant)
}

/// Starts this process again before it does anything else, when that makes it faster: as the
/// AVX-512 build beside it when [`better_build`] names one (run with `variant_args`: the app's
/// worker passes `worker`), and on glibc Linux with glibc told to put the memory malloc maps in
/// huge pages from the first byte (the weights, [`pages`]; this executable again, run with
/// `own_args`, when no other build is chosen). `argv[0]` is kept. Returns when neither applies,
/// or when starting fails: the caller goes on as it is.
///
/// [`pages`]: crate::decoding::llama::pages
pub fn hand_over(variant_args: Vec<OsString>, own_args: Vec<OsString>) {
    use crate::decoding::llama::pages;
    let exe = std::env::current_exe().ok();
    let variant = exe.as_deref().and_then(better_build);
    let tunables = pages::tunables_to_start_with();
    let (program, args) = match (variant, exe) {
        (Some(variant), _) => (variant, variant_args),
        (None, Some(exe)) if tunables.is_some() => (exe, own_args),
        _ => return,
    };
    #[cfg(unix)]
    {
        use std::os::unix::process::CommandExt;
        let mut command = std::process::Command::new(&program);
        command.args(args);
        if let Some(arg0) = std::env::args_os().next() {
            command.arg0(arg0);
        }
        if let Some(t) = tunables {
            command.env(pages::GLIBC_TUNABLES, t);
        }
        // Only returns on failure (the process is replaced otherwise).
        let e = command.exec();
        eprintln!("draftlab: could not start {} ({e}); going on as it is", program.display());
    }
    #[cfg(not(unix))]
    let _ = (program, args, tunables);
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_plain_build_names_the_variant_beside_it_only_when_the_cpu_runs_it() {
        let dir = tempfile::tempdir().unwrap();
        let exe = dir.path().join("draftlab");
        std::fs::write(&exe, b"").unwrap();
        assert_eq!(better_build(&exe), None, "no variant beside it: nothing to hand over to");
        std::fs::write(dir.path().join(AVX512_EXE), b"").unwrap();
        let chosen = this_build() == "plain" && std::env::var_os(ENV).is_none() && cpu_runs_avx512_build();
        assert_eq!(better_build(&exe), chosen.then(|| dir.path().join(AVX512_EXE)));
    }
}
