//! A counterfactual: the scenario without a cgroup's tasks (or a `[[task]]` group), to see what
//! the others gain (`wblab run --without`).

use super::Scenario;

impl Scenario {
    /// Drops the tasks of cgroup `who` (a path, `/etl`: its tasks and its descendants') or of
    /// the `[[task]]` group named `who`: their count becomes 0, and groups that waited for them
    /// (`stonewall`, `wait_for`) no longer do. The cgroups and their limits stay. Returns the
    /// what-if note the run's header shows, or why `who` names nothing.
    pub fn without(&mut self, who: &str) -> Result<String, String> {
        let is_path = who.starts_with('/');
        let groups = &self.cgroups.groups;
        let under = |k: usize| {
            let mut at = Some(k);
            while let Some(g) = at {
                if groups[g].path == who {
                    return true;
                }
                at = groups[g].parent;
            }
            false
        };
        let gone: Vec<usize> = self
            .tasks
            .iter()
            .enumerate()
            .filter(|(_, t)| t.count > 0 && if is_path { t.cgroup.is_some_and(under) } else { t.name == who })
            .map(|(i, _)| i)
            .collect();
        if gone.is_empty() {
            let known: Vec<String> = if is_path {
                groups.iter().map(|g| g.path.clone()).collect()
            } else {
                self.tasks.iter().map(|t| t.name.clone()).collect()
            };
            let what = if is_path { "cgroup with tasks" } else { "[[task]] group" };
            return Err(format!(
                "--without {who}: no {what} of that name; the scenario has: {}",
                known.join(", ")
            ));
        }
        let names: Vec<String> = gone.iter().map(|&i| self.tasks[i].name.clone()).collect();
        for &i in &gone {
            self.tasks[i].count = 0;
        }
        for t in &mut self.tasks {
            t.after.retain(|a| !gone.contains(a));
        }
        let note = format!("without {who}: its tasks ({}) do not run", names.join(", "));
        self.what_if.push(note.clone());
        Ok(note)
    }
}
