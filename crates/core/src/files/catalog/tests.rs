use super::read::MAX_CATALOG_BYTES;
use super::*;
use crate::files::doctor;
use crate::files::gguf::tests::Builder;
use crate::files::gguf::GgufFile;

const GB: u64 = 1_000_000_000;
const GIB: u64 = 1 << 30;

#[test]
fn the_catalog_parses_and_is_consistent() {
    let all = builtin();
    assert!(all.len() >= 60, "{} entries", all.len());
    let families: std::collections::BTreeSet<&str> = all.iter().map(|m| m.family.as_str()).collect();
    assert!(families.len() >= 14, "{families:?}");
    // The 2026 families, each with targets.
    for f in ["qwen3.5", "qwen3.6", "qwen3.8", "gemma4", "qwen3-coder-next", "glm-4.7"] {
        assert!(all.iter().any(|m| m.family == f && m.drafter.is_none()), "{f}");
    }
    validate(&all).expect("the built-in catalog is consistent");
    for m in &all {
        if m.files.iter().any(|f| f.quant == "Q4_K_M") {
            assert_eq!(m.files[0].quant, "Q4_K_M", "{}", m.id);
        }
        for f in &m.files {
            // A publisher's own mix is planned as its base recipe: only a stated size is exact.
            assert!(!f.own_mix || !f.size_estimated, "{}: {f:?}", m.id);
            // A pinned revision is what the size and hash were checked against.
            assert!(f.revision.is_none() || !f.size_estimated, "{}: pinned without a stated size", m.id);
        }
        // Every entry names its evidence; exact sizes name theirs.
        assert!(!m.source.files.trim().is_empty() && !m.source.arch.trim().is_empty(), "{}", m.id);
        if m.files.iter().any(|f| !f.size_estimated) {
            assert!(m.source.size.is_some(), "{}: exact sizes without a source", m.id);
        }
        assert!(m.active_params.is_some() == m.arch.as_ref().is_some_and(|a| a.experts.is_some()), "{}", m.id);
        match m.drafter {
            None => {
                // A model: its shape, its context, no targets.
                let a = m.arch.as_ref().unwrap_or_else(|| panic!("{}: a model without a shape", m.id));
                assert!(m.context > 0 && m.drafts_for.is_empty() && a.layers > 0, "{}", m.id);
            }
            Some(kind) => {
                // A drafter: targets that exist and are models, and no drafts of its own.
                assert!(!m.drafts_for.is_empty() && m.drafts.is_empty(), "{}", m.id);
                for t in &m.drafts_for {
                    let target =
                        all.iter().find(|x| &x.id == t).unwrap_or_else(|| panic!("{}: unknown target {t}", m.id));
                    assert!(target.drafter.is_none(), "{}: drafts for the drafter {t}", m.id);
                    assert!(bundle(target, &all).iter().any(|b| b.id == m.id && b.strategy == kind.strategy_name()));
                }
                if m.arch.is_none() {
                    assert!(m.files.iter().all(|f| !f.size_estimated), "{}: no shape, so a stated size", m.id);
                }
            }
        }
        for d in &m.drafts {
            let draft = all.iter().find(|x| &x.id == d).unwrap_or_else(|| panic!("{}: unknown draft {d}", m.id));
            assert!(draft.drafter.is_none(), "{}: {d} is a drafter, not a draft model", m.id);
            assert!(draft.params < m.params, "{}: draft {d} is not smaller", m.id);
            // llama.cpp's rule: vocabularies within 128 tokens.
            let (dv, tv) = (draft.arch.as_ref().expect("shape").vocab, m.arch.as_ref().expect("shape").vocab);
            assert!(dv.abs_diff(tv) <= 128, "{} / {d}: vocabularies differ", m.id);
        }
    }
    let q = find("qwen2.5-coder-7b-instruct").expect("found");
    assert_eq!(q.repo, "bartowski/Qwen2.5-Coder-7B-Instruct-GGUF");
    assert_eq!(q.file(None).expect("default").file, "Qwen2.5-Coder-7B-Instruct-Q4_K_M.gguf");
    assert!(q.file(Some("Q2_K")).unwrap_err().to_string().contains("comes in"));
    assert!(find("qwen2.5-coder").unwrap_err().to_string().contains("did you mean"));
    // Mixture of experts: total and active parameters.
    let moe = find("qwen3-30b-a3b").expect("found");
    assert!(moe.params > 30 * GB && moe.active_params.expect("MoE") < 4 * GB, "{moe:?}");
    let moe = find("qwen3.5-35b-a3b").expect("found");
    assert!(moe.params > 33 * GB && moe.active_params.expect("MoE") < 4 * GB, "{moe:?}");
    let moe = find("gpt-oss-120b").expect("found");
    assert!(moe.params > 110 * GB && moe.active_params.expect("MoE") < 7 * GB, "{moe:?}");
    // Gemma 4 26B-A4B: experts beside a dense MLP; GLM-4.7-Flash: latent attention, a dense
    // first layer (its Hub page counts 29,943,393,920 parameters in the GGUF).
    let moe = find("gemma-4-26b-a4b-it").expect("found");
    assert!((25 * GB..27 * GB).contains(&moe.params) && moe.active_params.expect("MoE") < 5 * GB, "{moe:?}");
    let moe = find("glm-4.7-flash").expect("found");
    assert_eq!(moe.params, 29_943_393_920);
    assert!(moe.active_params.expect("MoE") < 4 * GB, "{moe:?}");
    let moe = find("qwen3-coder-next").expect("found");
    assert!((79 * GB..81 * GB).contains(&moe.params) && moe.active_params.expect("MoE") < 4 * GB, "{moe:?}");
    // Gemma 4's KV cache as llama.cpp lays it out: the 31B keeps 4 KV heads of 512 on its 10
    // full-attention layers and 16 of 256 on its 50 sliding-window ones (V cached even where it
    // is the K projection); E2B's last 20 layers keep none (3 full, 12 sliding of its own).
    let fp = find("gemma-4-31b-it").expect("found").footprint(None).expect("footprint");
    assert_eq!((fp.kv_per_token, fp.swa_kv_per_token, fp.swa_window), (10 * 4 * 512 * 4, 50 * 16 * 256 * 4, 1024));
    let fp = find("gemma-4-e2b-it").expect("found").footprint(None).expect("footprint");
    assert_eq!((fp.kv_per_token, fp.swa_kv_per_token), (3 * 512 * 4, 12 * 256 * 4));
    // GLM-4.7-Flash: one compressed row of 512 and its 64 rotary values per layer.
    let fp = find("glm-4.7-flash").expect("found").footprint(None).expect("footprint");
    assert_eq!(fp.kv_per_token, 47 * (2 * 512 + 64) * 2);
    // Every drafter kind the catalog has so far, and a draft model across families (Qwen3.5
    // drafts for Qwen3.6 and 3.8: one tokenizer).
    let kinds: std::collections::BTreeSet<&str> =
        all.iter().filter_map(|m| m.drafter).map(|k| k.strategy_name()).collect();
    assert_eq!(kinds, ["eagle3", "mtp"].into_iter().collect(), "{kinds:?}");
    assert!(find("qwen3.6-27b").expect("found").drafts.contains(&"qwen3.5-0.8b".to_string()));
}

/// An organisation's catalog file: read and checked like the built-in one; a broken one is an
/// error naming the file and what is wrong, never the built-in catalog in its place.
#[test]
fn a_catalog_file_of_one_s_own_is_read_and_checked() {
    let dir = tempfile::tempdir().expect("temp dir");
    let path = dir.path().join("catalog.json");
    let arch = r#"{"layers": 30, "embd": 576, "ff": 1536, "heads": 9, "kv_heads": 3, "head_dim": 64, "vocab": 49152, "tied_embeddings": true}"#;
    let small = r#"{"layers": 2, "embd": 576, "ff": 1536, "heads": 9, "kv_heads": 3, "head_dim": 64, "vocab": 49152, "tied_embeddings": true}"#;
    let write = |draft: &str, version: u32| {
        let text = format!(
            r#"{{"version": {version}, "note": "ours", "families": [{{"id": "tiny", "name": "Tiny", "models": [
              {{"id": "tiny-chat", "repo": "acme/tiny", "context": 8192, "arch": {arch}, "files": [{{"quant": "Q4_1", "file": "tiny.gguf", "size": 90000000}}],
                "drafts": ["{draft}"], "source": {{"files": "ours", "arch": "ours"}}}},
              {{"id": "tiny-draft", "repo": "acme/tiny-draft", "context": 8192, "arch": {small}, "files": [{{"quant": "Q4_1", "file": "draft.gguf", "size": 9000000}}],
                "source": {{"files": "ours", "arch": "ours"}}}}]}}]}}"#
        );
        std::fs::write(&path, text).expect("write");
    };
    write("tiny-draft", 3);
    let all = load(&path).expect("a good catalog");
    assert_eq!(all.iter().map(|m| m.id.as_str()).collect::<Vec<_>>(), ["tiny-chat", "tiny-draft"]);
    let b = bundle(&all[0], &all);
    assert_eq!((b[0].id.as_str(), b[0].size), ("tiny-draft", 9_000_000));
    assert!(b[0].expected > 1.3, "a tenth-size draft at the assumed acceptance: {}", b[0].expected);
    let name = path.display().to_string();
    for (draft, version, why) in [("tiny-other", 3, "tiny-other is not in the catalog"), ("tiny-draft", 2, "version 2")]
    {
        write(draft, version);
        let e = load(&path).expect_err("refused").to_string();
        assert!(e.contains(&name) && e.contains(why) && e.contains("unset DRAFTLAB_CATALOG"), "{e}");
    }
    std::fs::write(&path, "{\"version\": 3,").expect("write");
    assert!(load(&path).expect_err("not JSON").to_string().contains("is not a catalog"));
    std::fs::write(&path, vec![b' '; (MAX_CATALOG_BYTES + 1) as usize]).expect("write");
    assert!(load(&path).expect_err("too big").to_string().contains("is over 16 MiB"));
    let e = load(&dir.path().join("none.json")).expect_err("no file").to_string();
    assert!(e.contains("cannot be read"), "{e}");
}

/// The expected gain: 1× for a drafter as costly as the target, more the cheaper it is, never
/// past what the assumed acceptance allows; the catalog's pairs rank as their sizes say.
#[test]
fn expected_gains_follow_the_drafter_s_cost() {
    assert!((expected_speedup(1.0) - 1.0).abs() < 1e-9);
    let (a, b, c) = (expected_speedup(0.3), expected_speedup(0.1), expected_speedup(0.01));
    assert!(1.0 < a && a < b && b < c && c < 1.0 / (1.0 - ASSUMED_ACCEPTANCE), "{a} {b} {c}");
    let all = builtin();
    let gain = |t: &str, d: &str| {
        bundle(&find(t).expect("found"), &all).into_iter().find(|b| b.id == d).expect("drafter").expected
    };
    assert!(
        gain("qwen2.5-coder-7b-instruct", "qwen2.5-coder-0.5b-instruct")
            > gain("qwen2.5-coder-1.5b-instruct", "qwen2.5-coder-0.5b-instruct")
    );
}

/// A target's bundle: its own MTP layers first, then trained drafters made for it, then draft
/// models; `--with-draft` takes the first that fits beside it, or the kind asked for, and says
/// why when none does.
#[test]
fn bundles_list_every_drafter_and_the_best_one_fits() {
    let all = builtin();
    let ids = |id: &str| -> Vec<(String, String)> {
        bundle(&find(id).expect("found"), &all).into_iter().map(|b| (b.id, b.strategy)).collect()
    };
    let s = |a: &str, b: &str| (a.to_string(), b.to_string());
    assert_eq!(ids("qwen3.8-27b"), [s("qwen3.8-27b-mtp", "mtp"), s("qwen3.5-0.8b", "draft")]);
    assert_eq!(ids("qwen3.6-27b-mtp"), [s("qwen3.6-27b-mtp", "mtp"), s("qwen3.5-0.8b", "draft")]);
    assert_eq!(ids("qwen3-8b")[0], s("qwen3-8b-eagle3", "eagle3"));
    assert!(ids("qwen3-0.6b").is_empty());
    let mac = |gb: u64| MemoryInfo::apple_silicon(gb * GIB, None);
    let t = find("qwen3.8-27b").expect("found");
    assert_eq!(best_drafter(&t, None, &mac(36)).expect("fits").id, "qwen3.8-27b-mtp");
    assert_eq!(best_drafter(&t, Some("draft"), &mac(36)).expect("fits").id, "qwen3.5-0.8b");
    let e = best_drafter(&t, None, &mac(16)).unwrap_err().to_string();
    assert!(e.contains("no drafter for qwen3.8-27b fits") && e.contains("qwen3.8-27b-mtp needs"), "{e}");
    let e = best_drafter(&t, Some("dflash"), &mac(36)).unwrap_err().to_string();
    assert!(e.contains("no dflash drafter") && e.contains("qwen3.8-27b-mtp (mtp)"), "{e}");
    let e = best_drafter(&find("qwen3-0.6b").expect("found"), None, &mac(128)).unwrap_err().to_string();
    assert!(e.contains("no drafter") && e.contains("n-gram"), "{e}");
    // Every bundle fits the smallest Mac its target fits, with room for the drafter: the
    // smallest of Apple's memory sizes where the target alone fits.
    let macs = [8u64, 16, 18, 24, 32, 36, 48, 64, 96, 128, 192, 256, 512];
    let mut checked = 0;
    for m in all.iter().filter(|m| m.drafter.is_none()) {
        let Some(&gb) =
            macs.iter().find(|&&gb| memory_fit(m, None, &mac(gb)).expect("fit").verdict != MemoryVerdict::TooBig)
        else {
            continue;
        };
        for b in bundle(m, &all) {
            let d = all.iter().find(|x| x.id == b.id && b.separate);
            let bigger = macs
                .iter()
                .find(|&&g| g >= gb && memory_fit(m, d, &mac(g)).expect("fit").verdict != MemoryVerdict::TooBig);
            assert!(bigger.is_some(), "{} + {}: no Mac holds both", m.id, b.id);
            eprintln!(
                "{:<36} + {:<24} target alone: {gb:>3} GB Mac; with it: {:>3} GB",
                m.id,
                b.id,
                bigger.expect("some")
            );
            checked += 1;
        }
    }
    assert!(checked >= 40, "{checked}");
}

/// Estimated sizes come from the tensor types a quantisation uses: checked against every size
/// the catalog knows exactly (a public source states it).
#[test]
fn estimates_match_the_sizes_sources_state() {
    let (mut checked, mut off) = (0, Vec::new());
    for m in builtin() {
        // A drafter head with no stated shape, or a publisher's own mix (UD-*, own_mix), have no
        // estimate to check.
        let Some(arch) = &m.arch else { continue };
        for f in m.files.iter().filter(|f| !f.size_estimated && !f.own_mix) {
            let est = arch.file_size(f.quantisation()).expect("estimate") as f64;
            let err = est / f.size as f64 - 1.0;
            eprintln!("{:<36} {:<9} estimate {est:>14} stated {:>14} ({:+.2} %)", m.id, f.quant, f.size, err * 100.0);
            if err.abs() >= 0.005 {
                off.push(format!("{} {}: estimate {est} vs {} ({:+.2} %)", m.id, f.quant, f.size, err * 100.0));
            }
            checked += 1;
        }
    }
    assert!(off.is_empty(), "estimates off by 0.5 % or more:\n{}", off.join("\n"));
    assert!(checked >= 10, "{checked}");
}

/// A GGUF file with the planned tensors of a catalog model and the header keys the doctor
/// reads; the data is a hole (sparse), so even a 72B "file" costs nothing.
fn header_only(m: &CatalogModel, dir: &std::path::Path) -> Option<GgufFile> {
    let f = m.file(None).expect("default");
    let a = m.arch.as_ref()?;
    let name = match (a.swa.as_ref().map(|s| s.full_every), &a.linear, &a.experts) {
        _ if a.global.is_some() => "gemma4",
        _ if a.mla.is_some() => "deepseek2",
        (Some(6), ..) => "gemma3",
        (Some(2), ..) => "gpt-oss",
        (_, Some(_), None) => "qwen35",
        (_, Some(_), Some(_)) => "qwen35moe",
        _ => "llama",
    };
    let mut b = Builder::new()
        .str("general.architecture", name)
        .u32(&format!("{name}.block_count"), (a.layers + a.mtp_layers) as u32)
        .u32(&format!("{name}.embedding_length"), a.embd as u32)
        .u32(&format!("{name}.attention.head_count"), a.heads as u32);
    if a.global.is_none() && a.mla.is_none() {
        b = b
            .u32(&format!("{name}.attention.head_count_kv"), a.kv_heads as u32)
            .u32(&format!("{name}.attention.key_length"), a.head_dim as u32)
            .u32(&format!("{name}.attention.value_length"), a.head_dim as u32);
    }
    if let Some(s) = &a.swa {
        b = b.u32(&format!("{name}.attention.sliding_window"), s.window as u32);
    }
    if let Some(g) = &a.global {
        // Gemma 4 as its converter writes it: the full layers' width as key_length, the
        // sliding-window layers' as key_length_swa, a per-layer pattern and KV-head count.
        let every = a.swa.as_ref().map_or(1, |s| s.full_every.max(1));
        let sliding: Vec<bool> = (0..a.layers).map(|i| !(i + 1).is_multiple_of(every)).collect();
        let kv: Vec<u32> = sliding.iter().map(|&s| if s { a.kv_heads } else { g.kv_heads } as u32).collect();
        b = b
            .u32(&format!("{name}.attention.key_length"), g.head_dim as u32)
            .u32(&format!("{name}.attention.value_length"), g.head_dim as u32)
            .u32(&format!("{name}.attention.key_length_swa"), a.head_dim as u32)
            .u32(&format!("{name}.attention.value_length_swa"), a.head_dim as u32)
            .bools(&format!("{name}.attention.sliding_window_pattern"), &sliding)
            .u32s(&format!("{name}.attention.head_count_kv"), &kv)
            .u32(&format!("{name}.attention.shared_kv_layers"), a.kv_shared_layers as u32);
    }
    if let Some(m) = &a.mla {
        // DeepSeek-V2's latent attention as llama.cpp's converter writes it: one KV head, the
        // compressed row (and its rotary part) as K, the compressed row as V.
        b = b
            .u32(&format!("{name}.attention.head_count_kv"), 1)
            .u32(&format!("{name}.attention.key_length"), (m.kv_lora + m.rope) as u32)
            .u32(&format!("{name}.attention.value_length"), m.kv_lora as u32)
            .u32(&format!("{name}.attention.kv_lora_rank"), m.kv_lora as u32);
    }
    if let Some(l) = &a.linear {
        b = b
            .u32(&format!("{name}.full_attention_interval"), l.full_every as u32)
            .u32(&format!("{name}.ssm.conv_kernel"), l.conv as u32)
            .u32(&format!("{name}.ssm.state_size"), l.head_dim as u32)
            .u32(&format!("{name}.ssm.group_count"), l.k_heads as u32)
            .u32(&format!("{name}.ssm.time_step_rank"), l.v_heads as u32)
            .u32(&format!("{name}.ssm.inner_size"), (l.v_heads * l.head_dim) as u32);
    }
    if a.mtp_layers > 0 {
        b = b.u32(&format!("{name}.nextn_predict_layers"), a.mtp_layers as u32);
    }
    for t in a.tensors(f.quantisation()).expect("tensors") {
        b = b.tensor(&t.name, &t.dims, t.ggml_type);
    }
    Some(GgufFile::open(b.write_sparse(dir, &format!("{}.gguf", m.id), f.size)).expect("opens"))
}

/// One memory model: the catalog's badge and the doctor (reading a GGUF header) agree on every
/// catalog pair at 4 K context on 16, 36, 64 and 128 GB Macs.
#[test]
fn catalog_fit_and_the_doctor_agree_on_every_pair_and_mac() {
    let mut all = builtin();
    let dir = tempfile::tempdir().unwrap();
    let files: std::collections::HashMap<String, GgufFile> =
        all.iter().filter_map(|m| Some((m.id.clone(), header_only(m, dir.path())?))).collect();
    // A stated size below the planned tensors (an unsloth mix planned as its base recipe)
    // cannot be a sparse file's size: the entry then speaks of the file as written.
    for m in &mut all {
        if let Some(f) = files.get(&m.id) {
            m.files[0].size = m.files[0].size.max(f.file_size);
        }
    }
    let mut table = String::new();
    let mut pairs = 0;
    for gb in [16u64, 36, 64, 128] {
        let mac = MemoryInfo::apple_silicon(gb * GIB, None);
        for m in all.iter().filter(|m| m.drafter.is_none()) {
            let t = &files[&m.id];
            for d in std::iter::once(None).chain(m.drafts.iter().map(Some)) {
                let dm = d.map(|d| all.iter().find(|x| &x.id == d).expect("draft"));
                let ours = memory_fit(m, dm, &mac).expect("fit");
                let df = d.map(|d| &files[d]);
                let dx = doctor::diagnose_with(t, df, FIT_CONTEXT, KvScale::default(), Placement::default(), &mac);
                let doctor_says = dx.memory.verdict;
                let refused = dx
                    .findings
                    .iter()
                    .any(|f| f.topic == doctor::Topic::Memory && f.level == doctor::Verdict::Incompatible);
                assert_eq!(refused, doctor_says == MemoryVerdict::TooBig);
                assert_eq!(ours.verdict, doctor_says, "{gb} GB Mac, {} + {d:?}: catalog {ours:?}", m.id);
                let rel = ours.needed as f64 / dx.memory.needed as f64;
                assert!((0.99..1.01).contains(&rel), "{gb} GB, {} + {d:?}: {rel}", m.id);
                table.push_str(&format!("{gb:>4} GB  {:<32} {:<28} {:?}\n", m.id, d.map_or("-", |s| s), ours.verdict));
                pairs += 1;
            }
        }
    }
    assert!(pairs > 4 * 40, "{pairs}");
    // The case that broke trust: a 72B Q4_K_M with its draft does not fit a 64 GB Mac's GPU.
    let fits = fit(&all, &MemoryInfo::apple_silicon(64 * GIB, None));
    let q72 = fits.iter().find(|f| f.id == "qwen2.5-72b-instruct").expect("present");
    assert_eq!(q72.with_draft, Some(MemoryVerdict::TooBig), "{q72:?}\n{table}");
    // Raising iogpu.wired_limit_mb lets it fit.
    let raised = fit(&all, &MemoryInfo::apple_silicon(64 * GIB, Some(58 * 1024)));
    let q72 = raised.iter().find(|f| f.id == "qwen2.5-72b-instruct").expect("present");
    assert_eq!(q72.with_draft, Some(MemoryVerdict::Fits), "{q72:?}");
    // And every small model fits a 16 GB Mac with its draft.
    let small = fit(&all, &MemoryInfo::apple_silicon(16 * GIB, None));
    let q8 = small.iter().find(|f| f.id == "qwen3-8b").expect("present");
    assert_eq!(q8.with_draft, Some(MemoryVerdict::Fits), "{q8:?}");
}

#[test]
fn the_limit_says_where_it_comes_from() {
    let (bytes, why) = limit(&MemoryInfo::apple_silicon(64 * GIB, None));
    assert_eq!(bytes, 48 * GIB);
    assert!(why.contains("Metal's recommended maximum"), "{why}");
    let (bytes, why) = limit(&MemoryInfo::apple_silicon(64 * GIB, Some(57344)));
    assert_eq!(bytes, 56 * GIB);
    assert!(why.contains("iogpu.wired_limit_mb=57344"), "{why}");
    let (_, why) = limit(&MemoryInfo { total: 32 * GIB, available: 20 * GIB, gpu: None });
    assert!(why.contains("free now"), "{why}");
}
