// The page's one alert line: errors of requests, shown as text.

export function notify(error) {
  const el = document.getElementById("notice");
  if (!el) return;
  const text = error instanceof Error ? error.message : String(error);
  const hint = error && error.status === 401 ? " Enter a bearer token above." : "";
  el.textContent = `${text}${hint}`;
  el.hidden = false;
}

export function clearNotice() {
  const el = document.getElementById("notice");
  if (el) {
    el.hidden = true;
    el.textContent = "";
  }
}
