"""The headless browser the browser suites drive (the SSE EventSource test,
the status page test): Chromium, which scripts/deps.sh --test installs.
Those suites fail, never skip, without it.
"""
import shutil

NAMES = ("chromium", "chromium-browser", "google-chrome")


def chromium():
    """The path of a Chromium on PATH; RuntimeError if there is none."""
    for name in NAMES:
        path = shutil.which(name)
        if path:
            return path
    raise RuntimeError("chromium is not installed: run scripts/deps.sh --test "
                       "(apt-get install chromium)")
