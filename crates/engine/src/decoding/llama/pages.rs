//! Huge pages for a model's weights (Linux).
//!
//! Every token on a CPU reads every weight once. With 4 KiB pages that is a page-table walk every
//! 4 KiB of a walk through hundreds of megabytes; with 2 MiB pages, one every 2 MiB. Linux backs
//! memory with 2 MiB pages only where a program asks (`transparent_hugepage` set to `madvise`, the
//! default of most distributions), and llama.cpp does not ask.
//!
//! - **From the first byte**: glibc's malloc asks for huge pages for the memory it maps when the
//!   process starts with the tunable [`GLIBC_HUGE`] (glibc 2.35+), and ggml's buffers (the weights
//!   it repacks for its CPU kernels, the weights read from the file, the KV cache) come from
//!   malloc. The command line and the app's engine worker start again with it before anything
//!   else ([`tunables_to_start_with`], `serving::variant::hand_over`): pages are huge as they are
//!   first written, with no copy afterwards (loading is faster, not slower: fewer page faults).
//! - **Read, not mapped**: a mapped file stays in 4 KiB pages (the kernel's page cache), and the
//!   weights ggml does not repack (on Qwen2.5 1.5B Q4_K_M: the Q6_K output layer and half the
//!   `ffn_down`s, a third of a token's time) are read from the mapping. So where pages are huge from
//!   the start, a model wholly on the CPU that takes at most half of the memory available is read
//!   into memory instead ([`read_not_map`]).
//! - A load in a process started without the tunable (a program using the engine as a library,
//!   the tests) has the memory it made advised ([`after`]): the kernel's background thread
//!   collapses it into huge pages in its own time.
//!
//! Measured on Qwen2.5 1.5B Q4_K_M, an AMD EPYC with AVX2, 2 threads, 256 tokens, 5 alternating
//! reps: 21.4 tok/s without huge pages, 22.0 with the repacked weights in them, 22.3 with all;
//! loading 1.82 s mapped without huge pages, 1.53 s mapped with them, 2.21 s read with them (the
//! numbers and commands are in docs/cli.md). `DRAFTLAB_LLAMA_LOG=1` says how much memory a load put
//! in huge pages.
//!
//! `DRAFTLAB_HUGE_PAGES=0` turns huge pages off (and keeps files mapped); `DRAFTLAB_MMAP=1` keeps
//! every file mapped, `DRAFTLAB_MMAP=0` reads every file.

use std::ffi::OsString;

/// glibc's tunable that has malloc advise the memory it maps for huge pages (`MADV_HUGEPAGE`).
pub const GLIBC_HUGE: &str = "glibc.malloc.hugetlb=1";

/// The environment variable glibc reads its tunables from when a process starts.
pub const GLIBC_TUNABLES: &str = "GLIBC_TUNABLES";

/// The `GLIBC_TUNABLES` this process should start again with, so that its memory is in huge pages
/// from the first byte: the present value with [`GLIBC_HUGE`] added. `None` where it is not needed
/// or not possible: the value names the tunable already (set by the user, or by an earlier start),
/// huge pages are off or the kernel gives none, or the C library is not glibc.
pub fn tunables_to_start_with() -> Option<OsString> {
    if !cfg!(all(target_os = "linux", target_env = "gnu")) || !wanted() || !imp::huge_pages_possible() {
        return None;
    }
    with_huge(std::env::var_os(GLIBC_TUNABLES))
}

/// `tunables` with [`GLIBC_HUGE`] added, or `None` when they name glibc's huge-page tunable already.
fn with_huge(tunables: Option<OsString>) -> Option<OsString> {
    match tunables {
        Some(t) if hugetlb(&t.to_string_lossy()).is_some() => None,
        Some(mut t) if !t.is_empty() => {
            t.push(":");
            t.push(GLIBC_HUGE);
            Some(t)
        }
        _ => Some(GLIBC_HUGE.into()),
    }
}

/// The value `tunables` (`GLIBC_TUNABLES`' `name=value:…` list) gives glibc's huge-page tunable.
fn hugetlb(tunables: &str) -> Option<&str> {
    tunables.split(':').find_map(|kv| kv.strip_prefix("glibc.malloc.hugetlb="))
}

/// Whether this process's memory goes into huge pages as it is first written: it started with
/// glibc's huge-page tunable on (1: advised; 2: the kernel's reserved huge pages).
fn from_first_touch() -> bool {
    cfg!(all(target_os = "linux", target_env = "gnu"))
        && std::env::var_os(GLIBC_TUNABLES).is_some_and(|t| matches!(hugetlb(&t.to_string_lossy()), Some("1" | "2")))
}

/// The anonymous memory of the process before a load.
pub struct Before(Vec<(usize, usize)>);

/// Whether huge pages are asked for (`DRAFTLAB_HUGE_PAGES=0`: not).
fn wanted() -> bool {
    std::env::var_os("DRAFTLAB_HUGE_PAGES").is_none_or(|v| v != "0")
}

/// The process's anonymous mappings, read before a load.
pub fn before() -> Before {
    Before(if wanted() { imp::anonymous() } else { Vec::new() })
}

/// Whether a model file of `file_size` bytes, all of it on the CPU (`cpu_only`), is read into
/// memory rather than mapped: on Linux, where this process's memory is in huge pages from the
/// first byte, when the file takes at most half of the memory available now (a bigger one stays
/// mapped: the kernel can then page it in and out, where memory the process holds it cannot).
/// `DRAFTLAB_MMAP` decides when set.
pub fn read_not_map(file_size: u64, cpu_only: bool) -> bool {
    match std::env::var("DRAFTLAB_MMAP").as_deref() {
        Ok("0") => return true,
        Ok("1") => return false,
        _ => {}
    }
    cpu_only
        && wanted()
        && from_first_touch()
        && imp::huge_pages_possible()
        && file_size.saturating_mul(2) <= draftlab_core::machine::MemoryInfo::now().available
}

/// Advises the anonymous memory a load made since `before` for huge pages (regions of at least
/// 2 MiB, their 2 MiB-aligned inside). Returns the bytes advised.
pub fn after(before: Before) -> usize {
    if !wanted() {
        return 0;
    }
    imp::advise_new(&before.0)
}

/// The anonymous memory of this process in huge pages, in bytes (`AnonHugePages`), where the
/// system says (Linux).
pub fn in_huge_pages() -> Option<u64> {
    imp::in_huge_pages()
}

#[cfg_attr(not(target_os = "linux"), allow(dead_code))] // (the maps are Linux's)
const HUGE: usize = 2 << 20;

/// The parts of `after`'s regions that none of `before`'s covers, each cut to whole 2 MiB pages.
#[cfg_attr(not(target_os = "linux"), allow(dead_code))] // (the maps are Linux's)
fn new_parts(before: &[(usize, usize)], after: &[(usize, usize)]) -> Vec<(usize, usize)> {
    let mut parts = Vec::new();
    for &(start, end) in after {
        // What is left of [start, end) once every earlier region is taken out: each piece keeps
        // what lies before the region and what lies after it.
        let mut left = vec![(start, end)];
        for &(b0, b1) in before {
            left =
                left.into_iter().flat_map(|(s, e)| [(s, e.min(b0)), (s.max(b1), e)]).filter(|(s, e)| s < e).collect();
        }
        for (s, e) in left {
            let s = s.div_ceil(HUGE) * HUGE;
            let e = e / HUGE * HUGE;
            if s < e {
                parts.push((s, e));
            }
        }
    }
    parts
}

/// The anonymous regions of a `/proc/PID/maps` text: writable, private, no file.
#[cfg_attr(not(target_os = "linux"), allow(dead_code))] // (the maps are Linux's)
fn parse_anonymous(maps: &str) -> Vec<(usize, usize)> {
    maps.lines()
        .filter_map(|line| {
            let mut fields = line.split_ascii_whitespace();
            let range = fields.next()?;
            let perms = fields.next()?;
            let (_offset, _dev, inode) = (fields.next()?, fields.next()?, fields.next()?);
            let path = fields.next();
            if !perms.starts_with("rw") || !perms.ends_with('p') || inode != "0" || path.is_some() {
                return None;
            }
            let (a, b) = range.split_once('-')?;
            Some((usize::from_str_radix(a, 16).ok()?, usize::from_str_radix(b, 16).ok()?))
        })
        .filter(|(a, b)| a < b)
        .collect()
}

#[cfg(target_os = "linux")]
mod imp {
    pub fn anonymous() -> Vec<(usize, usize)> {
        std::fs::read_to_string("/proc/self/maps").map(|m| super::parse_anonymous(&m)).unwrap_or_default()
    }

    // The one unsafe call of the module: advice to the kernel (libc::madvise).
    #[allow(unsafe_code)]
    pub fn advise_new(before: &[(usize, usize)]) -> usize {
        let mut advised = 0;
        for (start, end) in super::new_parts(before, &anonymous()) {
            let (ptr, len) = (start as *mut libc::c_void, end - start);
            // SAFETY: advice on whole pages of mappings this process holds; it changes neither
            // the memory's contents nor its addresses, and a range unmapped meanwhile only makes
            // the call fail.
            if unsafe { libc::madvise(ptr, len, libc::MADV_HUGEPAGE) } == 0 {
                advised += len;
            }
        }
        advised
    }

    /// Whether this kernel gives anonymous memory huge pages where asked (`transparent_hugepage`
    /// not `never`).
    pub fn huge_pages_possible() -> bool {
        std::fs::read_to_string("/sys/kernel/mm/transparent_hugepage/enabled")
            .is_ok_and(|mode| !mode.contains("[never]"))
    }

    pub fn in_huge_pages() -> Option<u64> {
        let text = std::fs::read_to_string("/proc/self/smaps_rollup").ok()?;
        let line = text.lines().find(|l| l.starts_with("AnonHugePages:"))?;
        let kb: u64 = line.split_ascii_whitespace().nth(1)?.parse().ok()?;
        Some(kb * 1024)
    }
}

#[cfg(not(target_os = "linux"))]
mod imp {
    pub fn anonymous() -> Vec<(usize, usize)> {
        Vec::new()
    }

    pub fn advise_new(_before: &[(usize, usize)]) -> usize {
        0
    }

    pub fn huge_pages_possible() -> bool {
        false
    }

    pub fn in_huge_pages() -> Option<u64> {
        None
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_huge_page_tunable_is_added_once_to_what_glibc_is_told() {
        assert_eq!(with_huge(None), Some(GLIBC_HUGE.into()));
        assert_eq!(with_huge(Some("".into())), Some(GLIBC_HUGE.into()));
        let more = with_huge(Some("glibc.malloc.arena_max=2".into()));
        assert_eq!(more, Some(format!("glibc.malloc.arena_max=2:{GLIBC_HUGE}").into()));
        // Named already (by an earlier start, or by the user, even to turn it off): left as it is.
        assert_eq!(with_huge(more), None);
        assert_eq!(with_huge(Some("glibc.malloc.hugetlb=0".into())), None);
    }

    #[test]
    fn only_the_new_anonymous_memory_is_advised_in_whole_huge_pages() {
        let maps = "\
55d0c0000000-55d0c0021000 r-xp 00000000 fd:01 123 /usr/bin/draftlab
7f0000000000-7f0000800000 rw-p 00000000 00:00 0
7f0001000000-7f0001400000 rw-p 00000000 fd:01 456 /models/a.gguf
7f0002000000-7f0002100000 rw-p 00000000 00:00 0 [heap]
7f0003000000-7f0003001000 ---p 00000000 00:00 0
7f0004000000-7f0005000000 rw-s 00000000 00:01 9 /dev/zero (deleted)
";
        assert_eq!(parse_anonymous(maps), vec![(0x7f00_0000_0000, 0x7f00_0080_0000)]);

        let mb = 1 << 20;
        // An earlier region is left alone; one that grew is advised in its new part; a new one
        // is cut to its whole 2 MiB pages; a small one is skipped.
        let before = [(100 * mb, 110 * mb)];
        let after = [(100 * mb, 120 * mb), (201 * mb, 207 * mb), (300 * mb, 301 * mb)];
        assert_eq!(new_parts(&before, &after), vec![(110 * mb, 120 * mb), (202 * mb, 206 * mb)]);
        // A region cut in two by an earlier one inside it.
        let before = [(104 * mb, 106 * mb)];
        assert_eq!(new_parts(&before, &[(100 * mb, 110 * mb)]), vec![(100 * mb, 104 * mb), (106 * mb, 110 * mb)]);
    }
}
