//! A progress bar on long work (indicatif), drawn on standard error only
//! when it is a terminal: a script's output stays clean.

use indicatif::{ProgressBar, ProgressStyle};

pub struct Progress(ProgressBar);

impl Progress {
    /// Bytes, out of `total` (0: unknown).
    pub fn bytes(total: u64, what: &str) -> Progress {
        let bar = if total > 0 { ProgressBar::new(total) } else { ProgressBar::new_spinner() };
        let template =
            if total > 0 { "{msg} [{bar:30}] {bytes}/{total_bytes} ({eta})" } else { "{msg} {spinner} {bytes}" };
        if let Ok(style) = ProgressStyle::with_template(template) {
            bar.set_style(style.progress_chars("=> "));
        }
        bar.set_message(what.to_string());
        Progress(bar)
    }

    /// Work of unknown length.
    pub fn spinner(what: &str) -> Progress {
        let bar = ProgressBar::new_spinner();
        bar.set_message(what.to_string());
        bar.enable_steady_tick(std::time::Duration::from_millis(120));
        Progress(bar)
    }

    pub fn add(&self, n: u64) {
        self.0.inc(n);
    }

    pub fn done(&self) {
        self.0.finish_and_clear();
    }
}
