//! The import graph of `wblab-sim`'s own modules, held to the shape that keeps it readable.
//!
//! The kernel paths are `impl Machine` blocks in modules named after the kernel files they
//! model, and `Machine` owns the state they work on. Where a module both holds a type the
//! machine owns and imports `Machine` for its paths, the two import each other, and every
//! module either reaches joins one circle: it had grown to nineteen files once. So a module's
//! state sits apart from its paths (`fs/fs_writeback/mod.rs` holds `Wb`, its child
//! `writeback.rs` the flusher's work), the machine's own file imports only state, and this
//! test fails when a circle comes back.
//!
//! The graph is read with a Rust parser: every `use` tree and every `crate::`, `super::` and
//! `self::` path outside `#[cfg(test)]` items, resolved to the file of the deepest module it
//! names.

use std::collections::{BTreeMap, BTreeSet};
use std::path::{Path, PathBuf};
use syn::visit::Visit;

/// The largest circle of modules allowed anywhere in the crate (files that import each other,
/// directly or round a loop). Today's largest is bfq's four files, one scheduler whose queues,
/// tree and peak-rate estimator are files of one directory; the others are pairs (the loop
/// device and the host disk under it, the device registry and its model trait, the metrics
/// and fio's).
const MAX_CIRCLE: usize = 4;

/// A module path (`["fs", "fs_writeback"]`) for each source file, and back.
struct Modules {
    of_file: BTreeMap<PathBuf, Vec<String>>,
    file_of: BTreeMap<Vec<String>, PathBuf>,
}

impl Modules {
    fn scan(src: &Path) -> Modules {
        let mut of_file = BTreeMap::new();
        let mut stack = vec![src.to_path_buf()];
        while let Some(dir) = stack.pop() {
            for entry in std::fs::read_dir(&dir).unwrap() {
                let p = entry.unwrap().path();
                if p.is_dir() {
                    stack.push(p);
                } else if p.extension().is_some_and(|e| e == "rs") {
                    let rel = p.strip_prefix(src).unwrap().with_extension("");
                    let mut parts: Vec<String> = rel.iter().map(|s| s.to_string_lossy().into_owned()).collect();
                    if matches!(parts.last().map(String::as_str), Some("mod" | "lib")) {
                        parts.pop();
                    }
                    of_file.insert(p, parts);
                }
            }
        }
        let file_of = of_file.iter().map(|(f, m)| (m.clone(), f.clone())).collect();
        Modules { of_file, file_of }
    }

    /// The file of the deepest module `path` names.
    fn resolve(&self, path: &[String]) -> Option<&PathBuf> {
        (1..=path.len()).rev().find_map(|k| self.file_of.get(&path[..k]))
    }
}

/// `#[cfg(test)]`.
fn is_test(attrs: &[syn::Attribute]) -> bool {
    attrs.iter().any(|a| match &a.meta {
        syn::Meta::List(l) => l.path.is_ident("cfg") && l.tokens.to_string() == "test",
        _ => false,
    })
}

/// Every path a file names, as written (`crate::mm::vmstat::VmStat`, `super::Wb`,
/// `event::Event`), with the module it was written in.
struct Paths {
    module: Vec<String>,
    found: Vec<(Vec<String>, Vec<String>)>,
    /// Modules of their own file declared `#[cfg(test)] mod name;`.
    test_mods: Vec<Vec<String>>,
}

impl Paths {
    fn use_tree(&mut self, prefix: &mut Vec<String>, tree: &syn::UseTree) {
        match tree {
            syn::UseTree::Path(p) => {
                prefix.push(p.ident.to_string());
                self.use_tree(prefix, &p.tree);
                prefix.pop();
            }
            syn::UseTree::Name(n) => self.add(prefix.iter().cloned().chain([n.ident.to_string()]).collect()),
            syn::UseTree::Rename(r) => self.add(prefix.iter().cloned().chain([r.ident.to_string()]).collect()),
            syn::UseTree::Glob(_) => self.add(prefix.clone()),
            syn::UseTree::Group(g) => g.items.iter().for_each(|t| self.use_tree(prefix, t)),
        }
    }

    fn add(&mut self, path: Vec<String>) {
        if path.len() > 1 {
            self.found.push((self.module.clone(), path));
        }
    }
}

impl<'ast> Visit<'ast> for Paths {
    fn visit_item(&mut self, i: &'ast syn::Item) {
        let attrs = match i {
            syn::Item::Mod(m) => &m.attrs,
            syn::Item::Fn(f) => &f.attrs,
            syn::Item::Impl(m) => &m.attrs,
            syn::Item::Use(u) => &u.attrs,
            syn::Item::Const(c) => &c.attrs,
            syn::Item::Struct(s) => &s.attrs,
            _ => return syn::visit::visit_item(self, i),
        };
        if !is_test(attrs) {
            syn::visit::visit_item(self, i);
        } else if let syn::Item::Mod(m) = i {
            self.test_mods.push([self.module.clone(), vec![m.ident.to_string()]].concat());
        }
    }

    fn visit_item_mod(&mut self, m: &'ast syn::ItemMod) {
        if m.content.is_some() {
            self.module.push(m.ident.to_string());
            syn::visit::visit_item_mod(self, m);
            self.module.pop();
        }
    }

    fn visit_item_use(&mut self, u: &'ast syn::ItemUse) {
        self.use_tree(&mut Vec::new(), &u.tree);
    }

    fn visit_path(&mut self, p: &'ast syn::Path) {
        self.add(p.segments.iter().map(|s| s.ident.to_string()).collect());
        syn::visit::visit_path(self, p);
    }
}

/// `path`, written in `module`, as a path from the crate root; `None` for another crate's.
fn absolute(modules: &Modules, module: &[String], path: &[String]) -> Option<Vec<String>> {
    let mut base = module.to_vec();
    let mut rest = path;
    match rest.first().map(String::as_str) {
        Some("crate") => {
            base.clear();
            rest = &rest[1..];
        }
        Some("self") => rest = &rest[1..],
        Some("super") => {
            while rest.first().is_some_and(|s| s == "super") {
                base.pop();
                rest = &rest[1..];
            }
        }
        // A child module's name (`event::Event` in `machine`), or another crate's.
        Some(first) if modules.file_of.contains_key(&[module, &[first.to_string()]].concat()) => {}
        _ => return None,
    }
    Some([base, rest.to_vec()].concat())
}

/// Each file's imports of the crate's other files.
fn graph(src: &Path) -> (Modules, BTreeMap<PathBuf, BTreeSet<PathBuf>>) {
    let mut modules = Modules::scan(src);
    let mut edges = BTreeMap::new();
    let mut test_mods = Vec::new();
    for (file, module) in &modules.of_file {
        let text = std::fs::read_to_string(file).unwrap();
        let ast = syn::parse_file(&text).unwrap_or_else(|e| panic!("{}: {e}", file.display()));
        let mut paths = Paths {
            module: module.clone(),
            found: Vec::new(),
            test_mods: Vec::new(),
        };
        paths.visit_file(&ast);
        test_mods.extend(paths.test_mods.iter().cloned());
        let to: BTreeSet<PathBuf> = paths
            .found
            .iter()
            .filter_map(|(m, p)| modules.resolve(&absolute(&modules, m, p)?).cloned())
            .filter(|t| t != file)
            .collect();
        edges.insert(file.clone(), to);
    }
    // Test-only modules in files of their own are not part of the crate.
    let tests: BTreeSet<PathBuf> = modules
        .of_file
        .iter()
        .filter(|(_, m)| test_mods.iter().any(|t| m.starts_with(t)))
        .map(|(f, _)| f.clone())
        .collect();
    modules.of_file.retain(|f, _| !tests.contains(f));
    modules.file_of.retain(|_, f| !tests.contains(f));
    edges.retain(|f, _| !tests.contains(f));
    for to in edges.values_mut() {
        to.retain(|f| !tests.contains(f));
    }
    (modules, edges)
}

/// The circles: strongly connected sets of more than one file (Tarjan).
fn circles(edges: &BTreeMap<PathBuf, BTreeSet<PathBuf>>) -> Vec<Vec<PathBuf>> {
    struct Tarjan<'a> {
        edges: &'a BTreeMap<PathBuf, BTreeSet<PathBuf>>,
        index: BTreeMap<&'a PathBuf, (usize, usize)>,
        stack: Vec<&'a PathBuf>,
        on_stack: BTreeSet<&'a PathBuf>,
        out: Vec<Vec<PathBuf>>,
    }
    impl<'a> Tarjan<'a> {
        fn visit(&mut self, v: &'a PathBuf) {
            let n = self.index.len();
            self.index.insert(v, (n, n));
            self.stack.push(v);
            self.on_stack.insert(v);
            for w in &self.edges[v] {
                if !self.index.contains_key(w) {
                    self.visit(w);
                    let low = self.index[v].1.min(self.index[w].1);
                    self.index.get_mut(v).unwrap().1 = low;
                } else if self.on_stack.contains(w) {
                    let low = self.index[v].1.min(self.index[w].0);
                    self.index.get_mut(v).unwrap().1 = low;
                }
            }
            if self.index[v].0 == self.index[v].1 {
                let mut set = Vec::new();
                while let Some(w) = self.stack.pop() {
                    self.on_stack.remove(w);
                    set.push(w.clone());
                    if w == v {
                        break;
                    }
                }
                if set.len() > 1 {
                    set.sort();
                    self.out.push(set);
                }
            }
        }
    }
    let mut t = Tarjan {
        edges,
        index: BTreeMap::new(),
        stack: Vec::new(),
        on_stack: BTreeSet::new(),
        out: Vec::new(),
    };
    for v in edges.keys() {
        if !t.index.contains_key(v) {
            t.visit(v);
        }
    }
    t.out
}

fn src() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("src")
}

fn shown(src: &Path, set: &[PathBuf]) -> String {
    set.iter()
        .map(|f| f.strip_prefix(src).unwrap().display().to_string())
        .collect::<Vec<_>>()
        .join(", ")
}

#[test]
fn the_machine_is_in_no_circle_and_no_circle_grows() {
    let src = src();
    let (_, edges) = graph(&src);
    let machine = src.join("machine/mod.rs");
    assert!(edges.contains_key(&machine), "the machine's state is in machine/mod.rs");
    let found = circles(&edges);
    let all: Vec<String> = found.iter().map(|c| format!("[{}]", shown(&src, c))).collect();
    for c in &found {
        assert!(
            !c.contains(&machine),
            "machine/mod.rs is in a circle: {}. A module it takes state from imports `Machine`: \
             keep that state in a module of its own (see this test's doc).",
            shown(&src, c)
        );
        assert!(
            c.len() <= MAX_CIRCLE,
            "a circle of {} files: {}; all: {}",
            c.len(),
            shown(&src, c),
            all.join(" ")
        );
    }
}

/// The reader catches what the test is there to catch: a module the machine owns state from
/// that imports `Machine` (by `use`, by a full path, or through a child module's name) closes a
/// circle with the machine's file.
#[test]
fn the_reader_sees_a_circle_through_every_kind_of_path() {
    let dir = std::env::temp_dir().join(format!("wblab-circles-{}", std::process::id()));
    let files = [
        ("lib.rs", "pub mod machine;\npub mod mm;\n"),
        ("machine/mod.rs", "mod event;\npub use event::Event;\npub struct Machine { pub vm: crate::mm::vmstat::VmStat }\n"),
        ("machine/event.rs", "pub enum Event { A }\n"),
        ("mm/mod.rs", "pub mod vmstat;\npub mod other;\n"),
        ("mm/vmstat.rs", "use super::other::Thing;\npub struct VmStat;\n#[cfg(test)]\nmod tests { use crate::machine::Machine; }\n#[cfg(test)]\nmod more;\n"),
        ("mm/vmstat/more.rs", "use crate::machine::Machine;\n"),
        ("mm/other.rs", "pub struct Thing;\nfn f(m: &crate::machine::Machine) {}\n"),
    ];
    for (f, text) in files {
        let p = dir.join(f);
        std::fs::create_dir_all(p.parent().unwrap()).unwrap();
        std::fs::write(p, text).unwrap();
    }
    let (_, edges) = graph(&dir);
    let found = circles(&edges);
    std::fs::remove_dir_all(&dir).unwrap();
    assert_eq!(found.len(), 1, "{found:?}");
    let names: Vec<String> = found[0]
        .iter()
        .map(|f| f.strip_prefix(&dir).unwrap().display().to_string())
        .collect();
    assert_eq!(
        names,
        ["machine/mod.rs", "mm/other.rs", "mm/vmstat.rs"],
        "a test module's import is not an edge, inline or in its own file"
    );
    assert!(
        edges[&dir.join("machine/mod.rs")].contains(&dir.join("machine/event.rs")),
        "a child's name resolves"
    );
}
