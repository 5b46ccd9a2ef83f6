//! The house rules, checked on the source with a Rust parser (`syn`), not by matching lines:
//!
//! - **The native seam.** llama.cpp (`llama_cpp_2`, `llama_cpp_sys_2`) and the crate that links it
//!   (`draftlab_engine`) are named only where a crate's [`Rules`] allow: never in `draftlab-core`,
//!   the local server or the app's window code (its worker entry, `main.rs`, excepted), and inside
//!   the engine only in the files that wrap llama.cpp. Cargo enforces most of it (the crates do not
//!   depend on them); what one package holds for two processes (the app) is checked here.
//! - **Imports only go down** a crate's layers (see each crate's documentation); test code may use
//!   the test helpers.
//! - **No cycles** between the modules of a crate (a module and its own submodules excepted): a
//!   file that uses a sibling which uses it back is one concept in two rooms, or two concepts
//!   tangled. A submodule's uses count as its room's: `llama/model.rs` using `grammar` while
//!   `grammar` uses `llama` is a cycle.
//! - **Outside bytes in the worker.** The readers of files a user or a download put on disk (GGUF
//!   headers, the scan of model folders) and the chat-template renderer are named nowhere in the
//!   app's window code or the local server ([`WORKER_ONLY`]): the engine worker reads and renders
//!   for them, so a header or a template that is a bomb costs a worker, never the window.
//!
//! Every `use` tree (groups, `self`, `super`, globs, renames) and `extern crate`, every path in code
//! and every path in a macro call's tokens counts; comments, doc comments and strings do not. A
//! name an import binds is followed where code uses it (`use draftlab_engine as e; e::…`, `use
//! a::gguf; gguf::GgufFile`), and a glob of a reader's module names the reader. Code under
//! `#[cfg(test)]` (and files named `tests.rs`) is test code.

use std::collections::{BTreeMap, BTreeSet};
use std::path::{Path, PathBuf};

use proc_macro2::{TokenStream, TokenTree};
use syn::visit::{self, Visit};

/// What one crate's source must keep to.
#[derive(Debug, Clone, Default)]
pub struct Rules {
    /// Layers from the bottom up, each with its top-level modules (empty: no layers).
    pub layers: Vec<(&'static str, Vec<&'static str>)>,
    /// External crates no file may name…
    pub forbidden: Vec<&'static str>,
    /// …except these files (paths under `src/`), each with the forbidden crates it may name.
    pub allowed: Vec<(&'static str, Vec<&'static str>)>,
    /// Files that are not part of the crate's library (a binary's entry): not checked.
    pub skip: Vec<&'static str>,
    /// The C and C++ sources the crate may hold (paths under `src/`; none elsewhere).
    pub native: Vec<&'static str>,
    /// Ranks rather than layers: a module uses only modules of a lower layer, never one beside
    /// it; the crate root (`lib.rs`, and what it defines, `crate::Item`) is the module `lib`.
    pub ranks: bool,
    /// Readers of outside bytes (paths from a crate's name, `draftlab_core::files::gguf::GgufFile`)
    /// that no file may name: another process reads them for this crate.
    pub readers: Vec<&'static str>,
}

/// One reference from a file: the path as written, resolved, and whether test code makes it.
#[derive(Debug, Clone)]
struct Ref {
    /// Segments from the crate root (`crate::`, `self::` and `super::` resolved), or from an
    /// external crate's name.
    path: Vec<String>,
    internal: bool,
    test: bool,
    /// A glob import (`use a::b::*;`): it names everything in `path`.
    glob: bool,
}

/// Collects the references of one file.
struct Refs {
    /// The module the code being visited is in (the file's, then inline modules).
    module: Vec<String>,
    test_depth: usize,
    /// The names the file's imports bind, followed where code uses them ([`Aliases`]).
    aliases: BTreeMap<String, (Vec<String>, bool)>,
    out: Vec<Ref>,
}

/// A path as written, from the module `module`: its segments from the crate root (`crate::`,
/// `self::`, `super::` resolved) and whether it is the crate's own; none for a single name that is
/// not an import's (a local, a type parameter, a prelude name).
fn resolve(module: &[String], path: Vec<String>, imported: bool) -> Option<(Vec<String>, bool)> {
    let first = path.first()?;
    Some(match first.as_str() {
        "crate" => (path[1..].to_vec(), true),
        "self" => ([module.to_vec(), path[1..].to_vec()].concat(), true),
        "super" => {
            let ups = path.iter().take_while(|s| *s == "super").count();
            let base = &module[..module.len().saturating_sub(ups)];
            ([base.to_vec(), path[ups..].to_vec()].concat(), true)
        }
        _ if path.len() > 1 || imported => (path, false),
        _ => return None,
    })
}

/// What each name a `use` tree binds stands for: `use a::b as c;` binds `c` to `a::b`, `use a::b;`
/// binds `b`, `use a::{self as x}` binds `x` to `a` (globs bind no name of their own).
fn bindings(tree: &syn::UseTree, mut prefix: Vec<String>, out: &mut Vec<(String, Vec<String>)>) {
    match tree {
        syn::UseTree::Path(p) => {
            prefix.push(p.ident.to_string());
            bindings(&p.tree, prefix, out);
        }
        syn::UseTree::Name(n) if n.ident == "self" => {
            if let Some(last) = prefix.last().cloned() {
                out.push((last, prefix));
            }
        }
        syn::UseTree::Name(n) => {
            prefix.push(n.ident.to_string());
            out.push((n.ident.to_string(), prefix));
        }
        syn::UseTree::Rename(r) => {
            if r.ident != "self" {
                prefix.push(r.ident.to_string());
            }
            out.push((r.rename.to_string(), prefix));
        }
        syn::UseTree::Glob(_) => {}
        syn::UseTree::Group(g) => {
            for t in &g.items {
                bindings(t, prefix.clone(), out);
            }
        }
    }
}

/// The names a file's `use` and `extern crate` items bind, each with what it stands for (resolved
/// from the module the import is in), so that `use draftlab_engine as e; e::serving::…` and
/// `use core::files::gguf; gguf::GgufFile::open(…)` are read as the paths they are.
struct Aliases {
    module: Vec<String>,
    out: BTreeMap<String, (Vec<String>, bool)>,
}

impl<'ast> Visit<'ast> for Aliases {
    fn visit_item_mod(&mut self, m: &'ast syn::ItemMod) {
        self.module.push(m.ident.to_string());
        visit::visit_item_mod(self, m);
        self.module.pop();
    }

    fn visit_item_use(&mut self, u: &'ast syn::ItemUse) {
        let mut binds = Vec::new();
        bindings(&u.tree, Vec::new(), &mut binds);
        for (name, path) in binds {
            // `use x::y as y;` or `use serde;`: the name is what it stands for already.
            if path.len() == 1 && path[0] == name {
                continue;
            }
            if let Some(target) = resolve(&self.module, path, true) {
                self.out.insert(name, target);
            }
        }
    }

    fn visit_item_extern_crate(&mut self, e: &'ast syn::ItemExternCrate) {
        if let Some((_, rename)) = &e.rename {
            self.out.insert(rename.to_string(), (vec![e.ident.to_string()], false));
        }
    }
}

fn is_cfg_test(attrs: &[syn::Attribute]) -> bool {
    attrs.iter().any(|a| {
        a.path().is_ident("cfg")
            && match &a.meta {
                syn::Meta::List(l) => {
                    l.tokens.to_string().split(|c: char| !c.is_alphanumeric() && c != '_').any(|w| w == "test")
                }
                _ => false,
            }
    })
}

fn item_attrs(item: &syn::Item) -> &[syn::Attribute] {
    match item {
        syn::Item::Const(i) => &i.attrs,
        syn::Item::Enum(i) => &i.attrs,
        syn::Item::Fn(i) => &i.attrs,
        syn::Item::Impl(i) => &i.attrs,
        syn::Item::Macro(i) => &i.attrs,
        syn::Item::Mod(i) => &i.attrs,
        syn::Item::Static(i) => &i.attrs,
        syn::Item::Struct(i) => &i.attrs,
        syn::Item::Trait(i) => &i.attrs,
        syn::Item::Type(i) => &i.attrs,
        syn::Item::Use(i) => &i.attrs,
        _ => &[],
    }
}

/// Every path a `use` tree imports, and whether it is a glob's.
fn flatten_use(tree: &syn::UseTree, mut prefix: Vec<String>, out: &mut Vec<(Vec<String>, bool)>) {
    match tree {
        syn::UseTree::Path(p) => {
            prefix.push(p.ident.to_string());
            flatten_use(&p.tree, prefix, out);
        }
        syn::UseTree::Name(n) if n.ident == "self" => out.push((prefix, false)),
        syn::UseTree::Name(n) => {
            prefix.push(n.ident.to_string());
            out.push((prefix, false));
        }
        syn::UseTree::Rename(r) if r.ident == "self" => out.push((prefix, false)),
        syn::UseTree::Rename(r) => {
            prefix.push(r.ident.to_string());
            out.push((prefix, false));
        }
        syn::UseTree::Glob(_) => out.push((prefix, true)),
        syn::UseTree::Group(g) => {
            for t in &g.items {
                flatten_use(t, prefix.clone(), out);
            }
        }
    }
}

/// Paths (`a::b::c`) in a macro call's tokens, in every group.
fn token_paths(tokens: TokenStream, out: &mut Vec<Vec<String>>) {
    let tts: Vec<TokenTree> = tokens.into_iter().collect();
    let mut i = 0;
    while i < tts.len() {
        match &tts[i] {
            TokenTree::Group(g) => {
                token_paths(g.stream(), out);
                i += 1;
            }
            TokenTree::Ident(id) => {
                let mut path = vec![id.to_string()];
                let mut j = i + 1;
                while j + 2 < tts.len() {
                    let colons = matches!((&tts[j], &tts[j + 1]), (TokenTree::Punct(a), TokenTree::Punct(b)) if a.as_char() == ':' && b.as_char() == ':');
                    match (colons, tts.get(j + 2)) {
                        (true, Some(TokenTree::Ident(next))) => {
                            path.push(next.to_string());
                            j += 3;
                        }
                        _ => break,
                    }
                }
                if path.len() > 1 {
                    out.push(path);
                }
                i = j.max(i + 1);
            }
            _ => i += 1,
        }
    }
}

impl Refs {
    /// A path in code (followed through the file's imports), or one an import names (`imported`:
    /// a single name counts, `use draftlab_engine;`).
    fn add(&mut self, path: Vec<String>, imported: bool, glob: bool) {
        let followed = match path.first() {
            Some(first) if !imported => {
                self.aliases.get(first).map(|(to, internal)| ([to.clone(), path[1..].to_vec()].concat(), *internal))
            }
            _ => None,
        };
        let Some((resolved, internal)) = followed.or_else(|| resolve(&self.module, path, imported)) else { return };
        self.out.push(Ref { path: resolved, internal, test: self.test_depth > 0, glob });
    }
}

impl<'ast> Visit<'ast> for Refs {
    fn visit_item(&mut self, item: &'ast syn::Item) {
        let test = is_cfg_test(item_attrs(item));
        self.test_depth += usize::from(test);
        visit::visit_item(self, item);
        self.test_depth -= usize::from(test);
    }

    fn visit_item_mod(&mut self, m: &'ast syn::ItemMod) {
        self.module.push(m.ident.to_string());
        visit::visit_item_mod(self, m);
        self.module.pop();
    }

    fn visit_item_use(&mut self, u: &'ast syn::ItemUse) {
        let mut paths = Vec::new();
        flatten_use(&u.tree, Vec::new(), &mut paths);
        for (p, glob) in paths {
            self.add(p, true, glob);
        }
    }

    fn visit_item_extern_crate(&mut self, e: &'ast syn::ItemExternCrate) {
        self.add(vec![e.ident.to_string()], true, false);
    }

    fn visit_path(&mut self, p: &'ast syn::Path) {
        self.add(p.segments.iter().map(|s| s.ident.to_string()).collect(), false, false);
        visit::visit_path(self, p);
    }

    /// `pub(crate)`, `pub(super)`, `pub(in path)` say who may see an item: they name no module it
    /// uses.
    fn visit_visibility(&mut self, _: &'ast syn::Visibility) {}

    fn visit_macro(&mut self, m: &'ast syn::Macro) {
        let mut paths = Vec::new();
        token_paths(m.tokens.clone(), &mut paths);
        for p in paths {
            self.add(p, false, false);
        }
        visit::visit_macro(self, m);
    }
}

/// A source file and its module path (`lib.rs`: none; `a/mod.rs` and `a.rs`: `a`).
#[derive(Debug, Clone)]
struct File {
    rel: PathBuf,
    module: Vec<String>,
    test: bool,
}

/// The files under `dir` whose extension is one of `exts`.
fn files_under(dir: &Path, exts: &[&str], out: &mut Vec<PathBuf>) {
    let Ok(entries) = std::fs::read_dir(dir) else { return };
    for e in entries.flatten() {
        let p = e.path();
        if p.is_dir() {
            files_under(&p, exts, out);
        } else if p.extension().and_then(|x| x.to_str()).is_some_and(|x| exts.contains(&x)) {
            out.push(p);
        }
    }
}

fn files(src: &Path) -> Vec<File> {
    let mut paths = Vec::new();
    files_under(src, &["rs"], &mut paths);
    paths.sort();
    paths
        .into_iter()
        .map(|p| {
            let rel = p.strip_prefix(src).expect("under src").to_path_buf();
            let mut module: Vec<String> =
                rel.with_extension("").components().map(|c| c.as_os_str().to_string_lossy().into_owned()).collect();
            if matches!(module.last().map(String::as_str), Some("mod" | "lib" | "main")) {
                module.pop();
            }
            let test = module.last().is_some_and(|m| m == "tests");
            File { rel, module, test }
        })
        .collect()
}

/// The module a resolved path names: the longest prefix of it that is a file's module.
fn module_of<'a>(modules: &'a BTreeSet<Vec<String>>, path: &[String]) -> Option<&'a Vec<String>> {
    (1..=path.len()).rev().find_map(|n| modules.get(&path[..n]))
}

/// Every rule `src` breaks, one line each (empty: none).
pub fn check(src: &Path, rules: &Rules) -> Vec<String> {
    let files = files(src);
    let modules: BTreeSet<Vec<String>> = files.iter().map(|f| f.module.clone()).collect();
    let layer_of = |top: &str| rules.layers.iter().position(|(_, mods)| mods.contains(&top));
    let mut bad = Vec::new();
    let mut edges: BTreeMap<Vec<String>, BTreeSet<Vec<String>>> = BTreeMap::new();
    for f in &files {
        let rel = f.rel.to_string_lossy().replace('\\', "/");
        if rules.skip.contains(&rel.as_str()) {
            continue;
        }
        let refs = match references(src, f) {
            Ok(refs) => refs,
            Err(why) => {
                bad.push(format!("{rel}: {why}"));
                continue;
            }
        };
        // With ranks, the crate root is the module `lib`, and so are the items it defines.
        let root = |m: &Vec<String>| -> Option<String> {
            match m.first() {
                Some(top) => Some(top.clone()),
                None => rules.ranks.then(|| "lib".to_string()),
            }
        };
        let own_top = root(&f.module);
        let own = own_top.as_deref().and_then(&layer_of);
        let allowed: &[&str] = rules.allowed.iter().find(|(p, _)| *p == rel).map_or(&[], |(_, c)| c.as_slice());
        let mut said = BTreeSet::new();
        for r in refs {
            let top = r.path.first().map_or("", String::as_str);
            let mut say = |line: String| {
                if said.insert(line.clone()) {
                    bad.push(line);
                }
            };
            if !r.internal {
                if rules.forbidden.contains(&top) && !allowed.contains(&top) {
                    say(format!("{rel} names {top} ({})", r.path.join("::")));
                }
                // The reader itself, a path inside it, or a glob of the module that holds it.
                let written = r.path.join("::");
                if let Some(reader) = rules.readers.iter().find(|p| {
                    written == **p
                        || written.starts_with(&format!("{p}::"))
                        || (r.glob && p.starts_with(&format!("{written}::")))
                }) {
                    say(format!("{rel} does itself what only the worker does ({reader}): ask the worker"));
                }
                continue;
            }
            let top = match module_of(&modules, &r.path) {
                None if rules.ranks && layer_of(top).is_none() => "lib",
                _ => top,
            };
            if let (Some(own), Some(theirs)) = (own, layer_of(top)) {
                let helpers = r.test && rules.layers[theirs].0 == "testing";
                let beside = rules.ranks && theirs == own && own_top.as_deref() != Some(top);
                if (theirs > own || beside) && !helpers {
                    let whither = if theirs > own { "a layer above" } else { "beside it" };
                    say(format!(
                        "{rel} ({}) uses crate::{top} ({}), {whither}",
                        rules.layers[own].0, rules.layers[theirs].0
                    ));
                }
            }
            if !r.test && !f.test {
                if let Some((from, to)) = module_of(&modules, &r.path).and_then(|m| rooms(&f.module, m)) {
                    edges.entry(from).or_default().insert(to);
                }
            }
        }
    }
    native_code(src, rules, &mut bad);
    for cycle in cycles(&edges) {
        let names: Vec<String> = cycle.iter().map(|m| m.join("::")).collect();
        bad.push(format!("modules that use each other: {}", names.join(" ⇄ ")));
    }
    bad
}

/// What a file refers to: every path it names, aliases followed (or why it cannot be read).
fn references(src: &Path, f: &File) -> Result<Vec<Ref>, String> {
    let text = std::fs::read_to_string(src.join(&f.rel)).map_err(|e| format!("cannot be read: {e}"))?;
    let ast = syn::parse_file(&text).map_err(|e| format!("does not parse: {e}"))?;
    let mut aliases = Aliases { module: f.module.clone(), out: BTreeMap::new() };
    aliases.visit_file(&ast);
    let mut refs =
        Refs { module: f.module.clone(), test_depth: usize::from(f.test), aliases: aliases.out, out: Vec::new() };
    refs.visit_file(&ast);
    Ok(refs.out)
}

/// Native code other than the files the rules name.
fn native_code(src: &Path, rules: &Rules, bad: &mut Vec<String>) {
    let mut other = Vec::new();
    files_under(src, &["c", "cc", "cpp", "cxx", "h", "hpp", "m", "mm"], &mut other);
    other.sort();
    for p in other {
        let rel = p.strip_prefix(src).expect("under src").to_string_lossy().replace('\\', "/");
        if !rules.native.contains(&rel.as_str()) {
            bad.push(format!("{rel} is native code (only {:?} may be)", rules.native));
        }
    }
}

/// The two rooms a use joins: the children of the modules' common parent that hold each, so a
/// submodule's uses count as its room's (`llama/model.rs` using `grammar` is `llama` using it).
/// None when one module holds the other: a module and its own submodules may use each other.
fn rooms(from: &[String], to: &[String]) -> Option<(Vec<String>, Vec<String>)> {
    let common = from.iter().zip(to).take_while(|(a, b)| a == b).count();
    (common < from.len() && common < to.len()).then(|| (from[..=common].to_vec(), to[..=common].to_vec()))
}

/// The strongly connected components of more than one module (Tarjan's algorithm).
fn cycles(edges: &BTreeMap<Vec<String>, BTreeSet<Vec<String>>>) -> Vec<Vec<Vec<String>>> {
    struct State<'a> {
        edges: &'a BTreeMap<Vec<String>, BTreeSet<Vec<String>>>,
        index: BTreeMap<&'a Vec<String>, usize>,
        low: BTreeMap<&'a Vec<String>, usize>,
        stack: Vec<&'a Vec<String>>,
        on_stack: BTreeSet<&'a Vec<String>>,
        out: Vec<Vec<Vec<String>>>,
    }
    fn visit<'a>(s: &mut State<'a>, v: &'a Vec<String>) {
        let i = s.index.len();
        s.index.insert(v, i);
        s.low.insert(v, i);
        s.stack.push(v);
        s.on_stack.insert(v);
        if let Some(next) = s.edges.get(v) {
            for w in next {
                if !s.index.contains_key(w) {
                    visit(s, w);
                    let lw = s.low[w];
                    let lv = s.low[v];
                    s.low.insert(v, lv.min(lw));
                } else if s.on_stack.contains(w) {
                    let iw = s.index[w];
                    let lv = s.low[v];
                    s.low.insert(v, lv.min(iw));
                }
            }
        }
        if s.low[v] == s.index[v] {
            let mut scc = Vec::new();
            while let Some(w) = s.stack.pop() {
                s.on_stack.remove(w);
                scc.push(w.clone());
                if w == v {
                    break;
                }
            }
            if scc.len() > 1 {
                scc.sort();
                s.out.push(scc);
            }
        }
    }
    let mut s = State {
        edges,
        index: BTreeMap::new(),
        low: BTreeMap::new(),
        stack: Vec::new(),
        on_stack: BTreeSet::new(),
        out: Vec::new(),
    };
    let nodes: Vec<&Vec<String>> = edges.keys().chain(edges.values().flatten()).collect();
    for v in nodes {
        if !s.index.contains_key(v) {
            visit(&mut s, v);
        }
    }
    s.out
}

mod page;
#[cfg(test)]
mod tests;
mod workspace;

pub use page::ui_literals;
pub use workspace::{dependencies, workspace, WITHOUT_LLAMA, WORKER_ONLY};
