//! What a long piece of work (a generation, both modes, a benchmark, a sweep, a download) is
//! handed by whoever asked for it: a flag that asks it to stop at its next safe point, and where
//! its events go. One value instead of a `(cancel, on_event)` pair through every signature.

use std::sync::atomic::{AtomicBool, Ordering};

/// A flag nobody sets: the cancel flag of work that is never cancelled (a test, a measurement
/// inside a job that has its own).
static NEVER: AtomicBool = AtomicBool::new(false);

/// The cancel flag and the event sink of one piece of work, with events of type `E`.
pub struct Job<'a, E> {
    cancel: &'a AtomicBool,
    sink: &'a mut dyn FnMut(E),
}

impl<'a, E> Job<'a, E> {
    /// Work that stops when `cancel` is set and tells `sink` what happens.
    pub fn new(cancel: &'a AtomicBool, sink: &'a mut dyn FnMut(E)) -> Self {
        Job { cancel, sink }
    }

    /// Work that is never cancelled.
    pub fn uncancelled(sink: &'a mut dyn FnMut(E)) -> Self {
        Job { cancel: &NEVER, sink }
    }

    /// Whether whoever asked wants the work to stop (checked at safe points: between rounds,
    /// runs, cells, chunks).
    pub fn cancelled(&self) -> bool {
        self.cancel.load(Ordering::Relaxed)
    }

    /// The cancel flag itself, for work that hands it to another thread or an async task.
    pub fn cancel_flag(&self) -> &'a AtomicBool {
        self.cancel
    }

    /// Tells whoever asked that `event` happened.
    pub fn emit(&mut self, event: E) {
        (self.sink)(event)
    }

    /// Runs `work` as a part of this job: the same cancel flag, and each of its events of type
    /// `F` told as `wrap(event)` (a run's events with their mode, a sweep cell's with its cell).
    pub fn part<F, R>(&mut self, mut wrap: impl FnMut(F) -> E, work: impl FnOnce(&mut Job<'_, F>) -> R) -> R {
        let sink = &mut *self.sink;
        let mut wrapped = |event: F| sink(wrap(event));
        work(&mut Job { cancel: self.cancel, sink: &mut wrapped })
    }

    /// Runs `work` with this job's cancel flag and its events dropped (a warm-up, a measurement).
    pub fn quiet<F, R>(&self, work: impl FnOnce(&mut Job<'_, F>) -> R) -> R {
        work(&mut Job { cancel: self.cancel, sink: &mut |_| {} })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_part_shares_the_cancel_flag_and_wraps_its_events() {
        let cancel = AtomicBool::new(false);
        let mut seen = Vec::new();
        let mut sink = |e: (u8, &'static str)| seen.push(e);
        let mut job = Job::new(&cancel, &mut sink);
        job.emit((0, "start"));
        job.part(
            |e| (1, e),
            |part| {
                assert!(!part.cancelled());
                part.emit("inside");
                cancel.store(true, Ordering::Relaxed);
                assert!(part.cancelled(), "a part sees its job's cancel");
            },
        );
        job.quiet(|q: &mut Job<'_, &'static str>| q.emit("dropped"));
        assert!(job.cancelled());
        assert_eq!(seen, vec![(0, "start"), (1, "inside")]);
    }

    #[test]
    fn uncancelled_work_is_never_cancelled() {
        let mut n = 0;
        let mut count = |_: ()| n += 1;
        let mut job = Job::uncancelled(&mut count);
        job.emit(());
        assert!(!job.cancelled());
        assert_eq!(n, 1);
    }
}
