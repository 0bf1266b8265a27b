//! The names a crate's `use` items give: a path that goes through one (`crate::cache::X` with
//! `pub use files::cache;` at the root) is followed to the module that defines what it names.

use super::source::{defined_items, expand, inline_modules, inline_path, use_trees};
use super::{child_aliases, resolve, Module};
use std::collections::{BTreeMap, BTreeSet};
use std::path::PathBuf;

/// What the crate's `use` items make of names: `pub use files::cache;` at the root makes
/// `crate::cache` the module `files::cache`, `pub use a::*` in `m` sends `m`'s unknown names
/// to `a`.
pub(super) struct Tables<'a> {
    pub files: &'a BTreeMap<Module, PathBuf>,
    /// Each imported name (its module's path, then the name or its `as` name) and its target.
    reexports: BTreeMap<Module, Module>,
    /// Each module's glob imports, by target.
    globs: BTreeMap<Module, Vec<Module>>,
    /// The names each file's module defines itself.
    defined: BTreeMap<Module, BTreeSet<String>>,
}

impl<'a> Tables<'a> {
    pub fn new(files: &'a BTreeMap<Module, PathBuf>, blanked: &BTreeMap<&PathBuf, String>) -> Self {
        let mut tables = Tables {
            files,
            reexports: BTreeMap::new(),
            globs: BTreeMap::new(),
            defined: BTreeMap::new(),
        };
        for (module, path) in files {
            let text = &blanked[path];
            let inline = inline_modules(text);
            let aliases = child_aliases(module, text, &inline);
            for (at, tree) in use_trees(text) {
                let mut scope = module.clone();
                scope.extend(inline_path(&inline, at));
                for path in expand(&tree) {
                    let Some(mut target) = resolve(&scope, &path, &aliases) else {
                        continue;
                    };
                    if target.last().is_some_and(|s| s == "*") {
                        target.pop();
                        tables.globs.entry(scope.clone()).or_default().push(target);
                        continue;
                    }
                    let name = path.rsplit(" as ").next().unwrap_or(&path);
                    let name = name.rsplit("::").next().unwrap_or(name).trim();
                    if name == "_" || name.is_empty() || name == "self" {
                        continue;
                    }
                    let mut key = scope.clone();
                    key.push(name.to_string());
                    if key != target {
                        tables.reexports.insert(key, target);
                    }
                }
            }
            tables.defined.insert(module.clone(), defined_items(text));
        }
        tables
    }

    /// The length of the longest prefix of `named` that is a file's module.
    pub fn file_prefix(&self, named: &[String]) -> usize {
        (0..=named.len())
            .rev()
            .find(|&n| self.files.contains_key(&named[..n]))
            .unwrap_or(0)
    }

    /// `named` with every re-export it goes through replaced by what it names, so that it
    /// starts at the module that defines its item.
    pub fn canonical(&self, mut named: Module) -> Module {
        // A bound, not a count that matters: re-exports that name each other end here.
        for _ in 0..32 {
            let file = self.file_prefix(&named);
            let through = (file + 1..=named.len())
                .rev()
                .find_map(|n| self.reexports.get(&named[..n]).map(|t| (n, t)));
            if let Some((n, target)) = through {
                named = target.iter().chain(&named[n..]).cloned().collect();
                continue;
            }
            match self.through_glob(&named, file) {
                Some(next) => named = next,
                None => break,
            }
        }
        named
    }

    /// `named` through a glob import of the module it ends in, when that module does not
    /// define the name itself and the glob's target has it.
    fn through_glob(&self, named: &[String], file: usize) -> Option<Module> {
        for n in (file..named.len()).rev() {
            let Some(globs) = self.globs.get(&named[..n]) else {
                continue;
            };
            let name = &named[n];
            if self
                .defined
                .get(&named[..file])
                .is_some_and(|d| d.contains(name))
            {
                return None;
            }
            for glob in globs {
                let mut candidate = glob.clone();
                candidate.push(name.clone());
                let has = self.files.contains_key(&candidate)
                    || self.reexports.contains_key(&candidate)
                    || self.defined.get(glob).is_some_and(|d| d.contains(name));
                if has {
                    return Some(glob.iter().chain(&named[n..]).cloned().collect());
                }
            }
        }
        None
    }
}
