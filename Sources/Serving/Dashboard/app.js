// The mprobe dashboard: plain JavaScript over the service's JSON API, no framework, no build step.
//
// The access token lives in sessionStorage (this tab, this session) and travels in the
// Authorization header. Only <video> and <img> sources carry it as ?token=, where the API allows
// it for players that cannot set headers; the access log drops it there.
'use strict';

const TOKEN_KEY = 'mprobe.token';
const VIEWS = ['cache', 'jobs', 'thumbnails', 'probe', 'health'];
const FINAL_STATES = ['done', 'failed', 'cancelled'];
// Byte maps cost the server an offline open of each resource's header: draw the most recent ones.
const MAX_MAPS = 50;

const state = {
  view: null,
  jobs: [],
  probe: null,
  storyboard: null, // {key, cues, duration, previewIndex}
  jobTimer: null,
  healthTimer: null,
};

const $ = (id) => document.getElementById(id);

// MARK: Talking to the API

function token() {
  return sessionStorage.getItem(TOKEN_KEY) || '';
}

class Unauthorized extends Error {}

/** Calls the API with the token; JSON answers are parsed, others returned as text. */
async function api(path, options = {}) {
  const headers = Object.assign({}, options.headers);
  if (token()) headers.Authorization = 'Bearer ' + token();
  const response = await fetch(path, Object.assign({}, options, { headers }));
  if (response.status === 401) {
    showLogin();
    throw new Unauthorized('the server did not accept the token');
  }
  const text = await response.text();
  const json = (response.headers.get('Content-Type') || '').startsWith('application/json');
  const body = json && text ? JSON.parse(text) : text;
  if (!response.ok) {
    throw new Error(body && body.error ? body.error.message : 'HTTP ' + response.status);
  }
  return body;
}

/** A URL for a <video> or <img>: the token goes in the query, the only place such elements allow. */
function playerURL(path) {
  if (!token()) return path;
  return path + (path.includes('?') ? '&' : '?') + 'token=' + encodeURIComponent(token());
}

function streamURL(url) {
  return playerURL('/v1/stream?url=' + encodeURIComponent(url));
}

// MARK: Small helpers

/** An element with attributes (`text`, `class`, `dataset`, `on...` handled) and children. */
function el(tag, attributes = {}, ...children) {
  const node = document.createElement(tag);
  for (const [key, value] of Object.entries(attributes)) {
    if (value === undefined || value === null || value === false) continue;
    if (key === 'text') node.textContent = value;
    else if (key === 'class') node.className = value;
    else if (key === 'dataset') Object.assign(node.dataset, value);
    else if (key.startsWith('on')) node.addEventListener(key.slice(2), value);
    else node.setAttribute(key, value === true ? '' : value);
  }
  node.append(...children.filter((child) => child !== null && child !== undefined));
  return node;
}

function formatBytes(n) {
  const units = ['B', 'KiB', 'MiB', 'GiB', 'TiB'];
  let value = n;
  let unit = 0;
  while (value >= 1024 && unit < units.length - 1) {
    value /= 1024;
    unit += 1;
  }
  return (unit === 0 ? String(value) : value.toFixed(1)) + ' ' + units[unit];
}

/** A share as the CLI prints it: tenths, rounded down; 100.0% only when whole, never 0.0% when not empty. */
function formatShare(part, whole) {
  if (!(whole > 0)) return '100.0%';
  const tenths = Math.floor((part * 1000) / whole);
  return ((part > 0 ? Math.max(1, tenths) : 0) / 10).toFixed(1) + '%';
}

/** Seconds as m:ss.cc. */
function formatClock(seconds) {
  const hundredths = Math.round(Math.max(0, seconds) * 100);
  const minutes = Math.floor(hundredths / 6000);
  const rest = (hundredths % 6000) / 100;
  return minutes + ':' + (rest < 10 ? '0' : '') + rest.toFixed(2);
}

function formatSeconds(seconds) {
  return seconds.toFixed(1) + ' s';
}

function formatWhen(value) {
  const date = typeof value === 'number' ? new Date(value * 1000) : new Date(value);
  return date.toLocaleString();
}

function sum(ranges) {
  return ranges.reduce((total, r) => total + (r.end - r.start), 0);
}

function jobURLs(job) {
  const request = job.request || {};
  return [].concat(request.url || [], request.urls || []);
}

function say(message) {
  $('status').textContent = message;
  $('error').hidden = true;
}

function fail(error) {
  if (error instanceof Unauthorized) return;
  $('error').textContent = error.message || String(error);
  $('error').hidden = false;
}

// MARK: Token

function showLogin() {
  stopTimers();
  for (const section of document.querySelectorAll('.view')) section.hidden = section.id !== 'login';
  $('nav').hidden = true;
  $('forget').hidden = true;
  if (token()) fail(new Error('The server did not accept this token.'));
  $('token').focus();
}

async function start() {
  try {
    await api('/v1/health');
  } catch (error) {
    fail(error);
    return;
  }
  $('login').hidden = true;
  $('nav').hidden = false;
  $('forget').hidden = !token();
  route();
}

$('login-form').addEventListener('submit', (event) => {
  event.preventDefault();
  sessionStorage.setItem(TOKEN_KEY, $('token').value.trim());
  $('token').value = '';
  $('error').hidden = true;
  start();
});

$('forget').addEventListener('click', () => {
  sessionStorage.removeItem(TOKEN_KEY);
  showLogin();
});

// MARK: Views

function stopTimers() {
  clearTimeout(state.jobTimer);
  clearTimeout(state.healthTimer);
}

/** Shows the view the location's hash names (`#jobs`, `#thumbnails/ID/N`...) and loads its data. */
function route() {
  if (!$('login').hidden) return;
  const [name, ...rest] = location.hash.slice(1).split('/');
  const view = VIEWS.includes(name) ? name : 'cache';
  const changed = view !== state.view;
  state.view = view;
  for (const v of VIEWS) $('view-' + v).hidden = v !== view;
  for (const link of document.querySelectorAll('#nav a')) {
    if (link.getAttribute('href') === '#' + view) link.setAttribute('aria-current', 'page');
    else link.removeAttribute('aria-current');
  }
  // Keyboard and screen reader users land on the new view's heading.
  if (changed && location.hash) $(view + '-title').focus();
  stopTimers();
  pollJobs();
  if (view === 'cache') showCache().catch(fail);
  if (view === 'thumbnails') showThumbnails(rest).catch(fail);
  if (view === 'probe') showProbe();
  if (view === 'health') pollHealth();
}

window.addEventListener('hashchange', route);

// MARK: Jobs

/** Reloads the job list: every second while a job is unfinished, else every five. */
async function pollJobs() {
  clearTimeout(state.jobTimer);
  let active = false;
  try {
    const before = new Map(state.jobs.map((job) => [job.id, job.state]));
    state.jobs = (await api('/v1/jobs?limit=100')).jobs;
    renderJobs();
    active = state.jobs.some((job) => !FINAL_STATES.includes(job.state));
    const finished = state.jobs.some((job) => before.has(job.id) && before.get(job.id) !== job.state
                                                && FINAL_STATES.includes(job.state));
    if (finished && state.view === 'cache') showCache().catch(fail);
    if (finished && state.view === 'thumbnails') fillStoryboardChoices();
  } catch (error) {
    if (error instanceof Unauthorized) return;
    fail(error);
  }
  state.jobTimer = setTimeout(pollJobs, active ? 1000 : 5000);
}

/** Updates the job list in place, so that live regions announce only what changed. */
function renderJobs() {
  const list = $('job-list');
  $('jobs-empty').hidden = state.jobs.length > 0;
  const cards = new Map([...list.children].map((card) => [card.dataset.id, card]));
  state.jobs.forEach((job, i) => {
    let card = cards.get(job.id);
    if (!card) card = newJobCard(job);
    if (list.children[i] !== card) list.insertBefore(card, list.children[i] || null);
    updateJobCard(card, job);
    cards.delete(job.id);
  });
  for (const card of cards.values()) card.remove();
}

function newJobCard(job) {
  const urls = jobURLs(job);
  return el('li', { class: 'card job', dataset: { id: job.id } },
    el('h4', { class: 'job-title' },
      el('span', { text: job.type === 'prefetch' ? 'Prefetch' : 'Thumbnails' }), ' ',
      el('span', { class: 'state', 'aria-live': 'polite' })),
    el('ul', { class: 'urls' }, ...urls.map((url) => el('li', { class: 'url', text: url }))),
    el('p', { class: 'meta', text: 'Submitted ' + formatWhen(job.created) + ' · id ' + job.id }),
    el('div', { class: 'progress' },
      el('progress', { 'aria-label': 'Progress of job ' + job.id, max: 1, value: 0 }),
      el('span', { class: 'progress-text', 'aria-live': 'polite' })),
    el('div', { class: 'outcome' }),
    el('div', { class: 'actions' }));
}

function setText(node, text) {
  if (node.textContent !== text) node.textContent = text;
}

function updateJobCard(card, job) {
  const changed = card.dataset.state !== job.state;
  card.dataset.state = job.state;
  const badge = card.querySelector('.state');
  badge.className = 'state ' + job.state;
  setText(badge, job.state);
  const p = job.progress;
  const bar = card.querySelector('progress');
  const done = FINAL_STATES.includes(job.state);
  bar.max = Math.max(1, p.total_bytes);
  bar.value = job.state === 'done' ? bar.max : Math.min(p.bytes, bar.max);
  setText(card.querySelector('.progress-text'),
    (p.total_bytes > 0 ? formatBytes(p.bytes) + ' of ' + formatBytes(p.total_bytes) + ' · ' : '')
    + p.items_done + ' of ' + p.items + (p.items === 1 ? ' URL' : ' URLs'));
  if (!changed) return;
  const outcome = card.querySelector('.outcome');
  const actions = card.querySelector('.actions');
  outcome.replaceChildren();
  actions.replaceChildren();
  if (job.error) outcome.append(el('p', { class: 'error', text: job.error.code + ': ' + job.error.message }));
  const items = (job.result && job.result.items) || [];
  items.forEach((item, i) => {
    // A job fails when all its URLs did, with the first one's error: each URL's is news only in a batch.
    if (!item.ok && items.length > 1) {
      outcome.append(el('p', { class: 'error', text: item.url + ': ' + item.error.error.message }));
    } else if (job.type === 'thumbnails' && item.vtt) {
      actions.append(el('a', { class: 'button', href: '#thumbnails/' + job.id + '/' + (i + 1),
        text: items.length > 1 ? 'Storyboard ' + (i + 1) : 'Open storyboard' }));
    }
  });
  if (job.type === 'prefetch' && job.state === 'done') actions.append(el('a', { class: 'button', href: '#cache', text: 'Show in cache' }));
  if (!done) {
    actions.append(el('button', { type: 'button', text: 'Cancel', onclick: () => cancelJob(job.id) }));
  }
}

async function cancelJob(id) {
  try {
    await api('/v1/jobs/' + encodeURIComponent(id), { method: 'DELETE' });
    say('Job ' + id + ' cancelled.');
    pollJobs();
  } catch (error) {
    fail(error);
  }
}

$('job-type').addEventListener('change', () => {
  const type = $('job-type').value;
  for (const [name, shown] of [['prefetch-options', type === 'prefetch'], ['thumbnails-options', type === 'thumbnails']]) {
    $(name).hidden = !shown;
    $(name).disabled = !shown;
  }
});

$('job-form').addEventListener('submit', async (event) => {
  event.preventDefault();
  const type = $('job-type').value;
  const url = $('job-url').value.trim();
  if (type === 'probe') {
    runProbe(url);
    return;
  }
  const body = { type, url };
  if (type === 'prefetch') {
    body.start = Number($('job-start').value);
    body.seconds = Number($('job-seconds').value);
    body.tracks = $('job-tracks').value;
  } else {
    body.count = Number($('job-count').value);
    body.width = Number($('job-width').value);
    body.sprite = true;
  }
  $('job-submit').disabled = true;
  try {
    const job = await api('/v1/jobs', { method: 'POST', body: JSON.stringify(body),
                                        headers: { 'Content-Type': 'application/json' } });
    say((type === 'prefetch' ? 'Prefetch' : 'Thumbnail job') + ' queued: ' + job.id);
    pollJobs();
  } catch (error) {
    fail(error);
  } finally {
    $('job-submit').disabled = false;
  }
});

// MARK: Cache

/** The newest finished prefetch of `url`: the ranges it planned (header and samples). */
function lastPrefetchRanges(url) {
  for (const job of state.jobs) {
    if (job.type !== 'prefetch' || job.state !== 'done' || !job.result) continue;
    const item = job.result.items.find((it) => it.ok && it.url === url);
    if (item) return { job: job.id, ranges: item.prefetch.header_ranges.concat(item.prefetch.sample_ranges) };
  }
  return null;
}

/** Redraws the cache list, updating cards in place: a button someone is about to press or has
 *  focused stays where it is. */
async function showCache() {
  const resources = await api('/v1/cache/resources');
  if (!state.jobs.length) state.jobs = (await api('/v1/jobs?limit=100')).jobs;
  const list = $('cache-list');
  $('cache-empty').hidden = resources.length > 0;
  const shown = resources.slice(0, MAX_MAPS);
  const cards = new Map([...list.children].map((card) => [card.dataset.url, card]));
  shown.forEach((resource, i) => {
    const card = cards.get(resource.url) || cacheCard(resource.url);
    if (list.children[i] !== card) list.insertBefore(card, list.children[i] || null);
    const share = resource.size ? formatShare(resource.stored_bytes, resource.size) : '?';
    setText(card.querySelector('.meta'), (resource.size ? formatBytes(resource.size) : 'size unknown') + ' · ' + share
      + ' cached · last access ' + formatWhen(resource.last_access));
    cards.delete(resource.url);
  });
  for (const card of cards.values()) card.remove();
  $('cache-more').hidden = resources.length <= MAX_MAPS;
  $('cache-more').textContent = (resources.length - MAX_MAPS) + ' less recently used resources are not drawn.';
  // One at a time: each map asks the server to open that resource's header from the cache.
  for (const resource of shown) {
    const card = [...list.children].find((c) => c.dataset.url === resource.url);
    if (!card) continue; // removed meanwhile
    try {
      drawMaps(card, resource, await api('/v1/cache/ranges?url=' + encodeURIComponent(resource.url)));
    } catch (error) {
      fail(error);
    }
  }
}

function cacheCard(url) {
  return el('li', { class: 'card resource', dataset: { url } },
    el('h3', { class: 'url', text: url }),
    el('p', { class: 'meta' }),
    el('div', { class: 'maps' }, el('p', { class: 'meta', text: 'Reading the cached ranges…' })),
    el('div', { class: 'actions' },
      el('button', { type: 'button', text: 'Probe', onclick: () => runProbe(url) }),
      el('button', { type: 'button', class: 'danger', text: 'Remove',
                     'aria-label': 'Remove ' + url + ' from the cache', onclick: () => removeResource(url) })));
}

/** A bar of `length` with `layers`: each a class and ranges of {start, end} in the bar's unit. */
function rangeBar(kind, length, layers, label) {
  const bar = el('div', { class: 'rangebar ' + kind, role: 'img', 'aria-label': label });
  for (const [name, ranges] of layers) {
    for (const r of ranges) {
      const segment = el('span', { class: 'segment ' + name });
      // CSSOM styles are allowed by the page's Content-Security-Policy; style attributes are not.
      segment.style.left = (100 * r.start / length) + '%';
      segment.style.width = (100 * (r.end - r.start) / length) + '%';
      bar.append(segment);
    }
  }
  return bar;
}

function drawMaps(card, resource, ranges) {
  const maps = card.querySelector('.maps');
  const size = ranges.size || resource.size;
  if (!size) {
    maps.replaceChildren(el('p', { class: 'meta', text: 'The size is not known yet.' }));
    return;
  }
  const cached = sum(ranges.ranges);
  const last = lastPrefetchRanges(resource.url);
  const moov = ranges.moov ? [{ start: ranges.moov.offset, end: ranges.moov.offset + ranges.moov.size }] : [];
  const moovCached = moov.length && ranges.ranges.some((r) => r.start <= moov[0].start && r.end >= moov[0].end);
  const share = formatShare(cached, size);
  let label = share + ' of ' + formatBytes(size) + ' cached in ' + ranges.ranges.length + ' ranges';
  if (moov.length) {
    label += '; moov at bytes ' + moov[0].start + ' to ' + (moov[0].end - 1) + (moovCached ? '' : ', not all of it cached');
  }
  if (last) label += '; ' + last.ranges.length + ' ranges of the last prefetch highlighted';
  const bytes = rangeBar('bytemap', size, [['cached', ranges.ranges], ['job', last ? last.ranges : []], [moovCached ? 'moov' : 'moov partial', moov]], label);
  bytes.dataset.cachedPercent = share;
  const rows = [el('div', { class: 'maprow' }, el('span', { class: 'maplabel', text: 'bytes' }), bytes,
                   el('span', { class: 'mapvalue', text: share }))];
  const tracks = ranges.tracks || [];
  const duration = ranges.duration || Math.max(0, ...tracks.flatMap((t) => t.buffered.map((r) => r.end)));
  if (duration > 0) {
    for (const track of tracks) {
      const seconds = sum(track.buffered);
      const name = '#' + track.index + ' ' + track.type;
      const bar = rangeBar('timemap', duration, [['buffered', track.buffered]],
        name + ': ' + formatSeconds(seconds) + ' of ' + formatSeconds(duration) + ' buffered');
      bar.dataset.bufferedSeconds = seconds.toFixed(3);
      rows.push(el('div', { class: 'maprow' }, el('span', { class: 'maplabel', text: name }), bar,
                   el('span', { class: 'mapvalue', text: formatSeconds(seconds) })));
    }
  } else {
    rows.push(el('p', { class: 'meta', text: 'Buffered time is unknown: the header is not cached.' }));
  }
  maps.replaceChildren(...rows);
}

async function removeResource(url) {
  try {
    await api('/v1/cache?url=' + encodeURIComponent(url), { method: 'DELETE' });
    say('Removed ' + url + ' from the cache.');
    await showCache();
  } catch (error) {
    fail(error);
  }
}

// MARK: Probe

async function runProbe(url) {
  say('Probing ' + url + '…');
  try {
    state.probe = await api('/v1/probe?url=' + encodeURIComponent(url));
    say('Probed ' + url + '.');
    if (location.hash === '#probe') showProbe();
    else location.hash = '#probe';
  } catch (error) {
    fail(error);
  }
}

function describeTrack(t) {
  const parts = [t.codec + (t.profile ? ' (' + t.profile + ')' : '')];
  if (t.width && t.height) parts.push(t.width + '×' + t.height);
  if (t.frame_rate) parts.push(Math.round(t.frame_rate * 1000) / 1000 + ' fps');
  if (t.pixel_format) parts.push(t.pixel_format);
  if (t.sample_rate) parts.push(t.sample_rate + ' Hz');
  if (t.channels) parts.push(t.channels + ' ch' + (t.channel_layout ? ' (' + t.channel_layout + ')' : ''));
  if (t.language) parts.push(t.language);
  if (t.bit_rate) parts.push(Math.round(t.bit_rate / 1000) + ' kb/s');
  if (t.rotation) parts.push('rotated ' + t.rotation + '°');
  return parts.join(' · ');
}

function showProbe() {
  const p = state.probe;
  $('probe-empty').hidden = !!p;
  $('probe-card').hidden = !p;
  if (!p) return;
  let moov = 'none (not an MP4/MOV, or no moov box)';
  if (p.moov) {
    moov = (p.moov.position === 'front' ? 'at the front' : 'at the end: players need a second request')
      + ' (bytes ' + p.moov.offset + ' to ' + (p.moov.offset + p.moov.size - 1) + ', ' + formatBytes(p.moov.size) + ')';
  }
  const facts = [
    ['Format', p.format + (p.format_long_name ? ' — ' + p.format_long_name : '')],
    ['Duration', p.duration !== null ? formatClock(p.duration) : 'unknown'],
    ['Size', p.size !== null ? formatBytes(p.size) + ' (' + p.size + ' bytes)' : 'unknown'],
    ['Bit rate', p.bit_rate ? Math.round(p.bit_rate / 1000) + ' kb/s' : 'unknown'],
    ['moov', moov],
    ['Fragmented', p.fragmented ? 'yes' : 'no'],
    ['Fetch cost', p.fetch.requests + (p.fetch.requests === 1 ? ' request, ' : ' requests, ')
      + formatBytes(p.fetch.bytes_fetched) + ' fetched, ' + formatBytes(p.fetch.bytes_from_cache) + ' from the cache, '
      + p.fetch.seconds.toFixed(3) + ' s'],
  ];
  $('probe-card').replaceChildren(
    el('h3', { class: 'url', text: p.url }),
    el('dl', { class: 'facts' }, ...facts.flatMap(([term, value]) => [el('dt', { text: term }), el('dd', { text: value })])),
    el('h4', { text: 'Tracks' }),
    el('ul', { class: 'tracks' }, ...p.tracks.map((t) => el('li', { dataset: { type: t.type } },
      el('strong', { text: '#' + t.index + ' ' + t.type + (t.default ? ' (default)' : '') }), ' ', describeTrack(t)))));
}

// MARK: Thumbnails

/** Every finished thumbnail job's storyboards in the picker, newest first. */
function fillStoryboardChoices() {
  const pick = $('storyboard-pick');
  const chosen = pick.value;
  const options = [pick.options[0]];
  for (const job of state.jobs) {
    if (job.type !== 'thumbnails' || job.state !== 'done' || !job.result) continue;
    job.result.items.forEach((item, i) => {
      if (!item.ok || !item.vtt) return;
      options.push(el('option', { value: job.id + '/' + (i + 1),
        text: item.url + ' — ' + item.thumbnails.length + ' thumbnails, ' + formatWhen(job.created) }));
    });
  }
  pick.replaceChildren(...options);
  pick.value = chosen;
}

$('storyboard-pick').addEventListener('change', () => {
  if ($('storyboard-pick').value) location.hash = '#thumbnails/' + $('storyboard-pick').value;
});

async function showThumbnails([id, n]) {
  if (!state.jobs.length) state.jobs = (await api('/v1/jobs?limit=100')).jobs;
  fillStoryboardChoices();
  if (!id || !n) return;
  const key = id + '/' + n;
  $('storyboard-pick').value = key;
  if (state.storyboard && state.storyboard.key === key) return;
  const job = await api('/v1/jobs/' + encodeURIComponent(id));
  const item = job.result && job.result.items[Number(n) - 1];
  if (!item || !item.ok || !item.vtt) throw new Error('job ' + id + ' has no storyboard ' + n);
  const vtt = await api(item.files + item.vtt);
  const cues = parseStoryboard(vtt, new URL(item.files, location.href));
  if (!cues.length) throw new Error('the storyboard of job ' + id + ' has no cues');
  state.storyboard = { key, cues, duration: cues[cues.length - 1].end, previewIndex: 0 };
  $('storyboard-url').textContent = item.url;
  // Loaded when played (preload="none"): an address alone — a page can send the browser to any
  // #thumbnails/... — never makes the service fetch.
  $('player').src = streamURL(item.url);
  const timeline = $('timeline');
  timeline.setAttribute('aria-valuemax', state.storyboard.duration.toFixed(2));
  setTimelineValue(0);
  $('tiles').replaceChildren(...cues.map((cue, i) => el('li', {},
    el('button', { type: 'button', class: 'tile-button', 'aria-label': 'Play from ' + formatClock(cue.start),
                   dataset: { index: i, start: cue.start }, onclick: () => seek(cue.start) },
      tile(cue), el('span', { text: formatClock(cue.start) })))));
  $('storyboard').hidden = false;
}

/** WebVTT storyboard cues: `start --> end`, then an image reference, `sprite.jpg#xywh=x,y,w,h`. */
function parseStoryboard(text, base) {
  const lines = text.split(/\r?\n/);
  const cues = [];
  for (let i = 0; i + 1 < lines.length; i++) {
    const times = /^(\S+)\s+-->\s+(\S+)/.exec(lines[i]);
    if (!times) continue;
    const [file, fragment] = lines[i + 1].trim().split('#');
    const xywh = /xywh=(\d+),(\d+),(\d+),(\d+)/.exec(fragment || '');
    const url = new URL(file, base);
    cues.push({
      start: vttSeconds(times[1]), end: vttSeconds(times[2]),
      image: playerURL(url.pathname + url.search),
      xywh: xywh ? xywh.slice(1).map(Number) : null,
    });
  }
  return cues;
}

function vttSeconds(text) {
  return text.split(':').reduce((total, part) => total * 60 + Number(part), 0);
}

/** A tile of the sprite sheet, drawn as a background at its place on the sheet. */
function tile(cue, node = el('span', { class: 'tile' })) {
  node.style.backgroundImage = 'url("' + cue.image + '")';
  if (cue.xywh) {
    const [x, y, w, h] = cue.xywh;
    node.style.width = w + 'px';
    node.style.height = h + 'px';
    node.style.backgroundPosition = -x + 'px ' + -y + 'px';
    node.dataset.xywh = cue.xywh.join(',');
  } else {
    node.classList.add('whole');
  }
  return node;
}

/** The cue shown at `time`: the last one starting at or before it (the first before any). */
function cueAt(time) {
  const cues = state.storyboard.cues;
  let index = 0;
  cues.forEach((cue, i) => { if (cue.start <= time) index = i; });
  return index;
}

function setTimelineValue(time) {
  const timeline = $('timeline');
  timeline.setAttribute('aria-valuenow', time.toFixed(2));
  timeline.setAttribute('aria-valuetext', formatClock(time));
}

/** Shows the tile for `time` above the timeline, where the pointer (or the keyboard) is. */
function preview(time) {
  const board = state.storyboard;
  const index = cueAt(time);
  board.previewIndex = index;
  board.previewTime = time;
  const cue = board.cues[index];
  const box = $('preview');
  tile(cue, $('preview-tile'));
  $('preview-time').textContent = formatClock(time);
  box.dataset.index = index;
  box.dataset.time = time.toFixed(3);
  box.hidden = false;
  // Centred over the time, kept inside the timeline.
  const width = $('timeline').clientWidth;
  const x = width * time / board.duration;
  const half = box.offsetWidth / 2;
  box.style.left = Math.min(Math.max(0, x - half), Math.max(0, width - box.offsetWidth)) + 'px';
  setTimelineValue(time);
}

function timeAtPointer(event) {
  const rect = $('timeline').getBoundingClientRect();
  const fraction = Math.min(1, Math.max(0, (event.clientX - rect.left) / rect.width));
  return fraction * state.storyboard.duration;
}

$('timeline').addEventListener('pointermove', (event) => preview(timeAtPointer(event)));
$('timeline').addEventListener('pointerleave', () => { $('preview').hidden = true; });
$('timeline').addEventListener('click', (event) => seek(timeAtPointer(event)));
$('timeline').addEventListener('focus', () => preview(state.storyboard ? state.storyboard.cues[state.storyboard.previewIndex].start : 0));
$('timeline').addEventListener('blur', () => { $('preview').hidden = true; });
$('timeline').addEventListener('keydown', (event) => {
  const board = state.storyboard;
  if (!board) return;
  const last = board.cues.length - 1;
  const moves = { ArrowRight: board.previewIndex + 1, ArrowUp: board.previewIndex + 1, ArrowLeft: board.previewIndex - 1,
                  ArrowDown: board.previewIndex - 1, Home: 0, End: last };
  if (event.key in moves) {
    event.preventDefault();
    preview(board.cues[Math.min(last, Math.max(0, moves[event.key]))].start);
  } else if (event.key === 'Enter' || event.key === ' ') {
    event.preventDefault();
    seek(board.previewTime || 0);
  }
});

function seek(time) {
  const player = $('player');
  player.currentTime = time;
  player.play().catch(() => {}); // a browser that refuses to play unasked still shows the frame
}

$('player').addEventListener('timeupdate', () => {
  const board = state.storyboard;
  if (!board) return;
  const time = $('player').currentTime;
  $('playhead').style.left = (100 * Math.min(1, time / board.duration)) + '%';
  const current = cueAt(time);
  for (const button of document.querySelectorAll('#tiles .tile-button')) {
    if (Number(button.dataset.index) === current) button.setAttribute('aria-current', 'true');
    else button.removeAttribute('aria-current');
  }
});

// MARK: Health

async function pollHealth() {
  clearTimeout(state.healthTimer);
  try {
    renderHealth(await api('/v1/health'));
  } catch (error) {
    if (error instanceof Unauthorized) return;
    fail(error);
  }
  if (state.view === 'health') state.healthTimer = setTimeout(pollHealth, 2000);
}

function renderHealth(h) {
  const c = h.cache;
  $('health-cache').max = Math.max(1, c.max_bytes);
  $('health-cache').value = c.bytes;
  $('health-cache-text').textContent = formatBytes(c.bytes) + ' of ' + formatBytes(c.max_bytes) + ' ('
    + formatShare(c.bytes, c.max_bytes) + ') in ' + c.resources + (c.resources === 1 ? ' resource' : ' resources');
  $('health-hits').value = c.hit_ratio;
  const reads = c.hits + c.misses;
  $('health-hits-text').textContent = reads
    ? (100 * c.hit_ratio).toFixed(1) + '% of ' + reads + ' reads (' + c.hits + ' hits, ' + c.misses + ' misses)'
    : 'No reads yet.';
  const most = Math.max(1, h.origin_bytes, h.proxy_bytes);
  $('health-origin-bar').style.width = (100 * h.origin_bytes / most) + '%';
  $('health-served-bar').style.width = (100 * h.proxy_bytes / most) + '%';
  $('health-origin-text').textContent = formatBytes(h.origin_bytes);
  $('health-origin-text').dataset.bytes = h.origin_bytes;
  $('health-served-text').textContent = formatBytes(h.proxy_bytes);
  $('health-served-text').dataset.bytes = h.proxy_bytes;
  $('health-bytes-text').textContent = h.origin_bytes > 0
    ? 'Players got ' + (h.proxy_bytes / h.origin_bytes).toFixed(2) + ' bytes for each byte fetched from origins.'
    : 'Nothing fetched from origins yet.';
  $('health-jobs-text').textContent = 'Jobs: ' + Object.entries(h.jobs).map(([name, n]) => n + ' ' + name).join(', ') + '.';
  $('health-connections-text').textContent = h.origin_connections
    + (h.origin_connections === 1 ? ' connection' : ' connections') + ' to origins held open.';
}

start();
