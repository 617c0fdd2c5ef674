/* iopsd live page: polls the JSON API once per sample interval and draws it
 * with Chart.js (embedded, global `Chart`). The history is loaded once per
 * window and then extended with only the seconds that are new. Plain
 * browser JavaScript, no build step. */
'use strict';

(function () {
	const POINTS = 360;            /* per chart: longer windows use averaged steps */
	const MIB = 1048576;

	const $ = (id) => document.getElementById(id);
	const rootStyle = getComputedStyle(document.documentElement);
	const color = (name) => rootStyle.getPropertyValue('--' + name).trim();
	const C = {
		text: color('text'), muted: color('muted'), grid: color('grid'), read: color('read'),
		write: color('write'), third: color('third'), limit: color('limit'),
		estimate: color('estimate'), atLimit: color('at-limit'), throttled: color('throttled'),
		saturated: color('saturated'), total: color('total'),
	};

	const state = {
		window: 300,
		step: 0,            /* seconds per averaged point, 0: every sample */
		interval: 1,        /* the daemon's sample interval, seconds */
		historyMax: 3600,
		time: 0,            /* server time of the last history answer */
		minStep: 0,         /* the step the daemon asked for (max_history_points) */
		probesLoaded: false,
		meta: new Map(),    /* device name -> entry of /api/v1/devices */
		series: new Map(),  /* device name -> {t: [], c: {column: []}, limits, ceiling} */
		probeSeries: new Map(), /* probe name -> {t, p50, p99} */
		views: new Map(),   /* device name -> view */
		probeViews: new Map(),
		probes: [],
		selected: null,     /* Set of device names; null: the default choice */
		paused: false,
		busy: false,
		timer: 0,
		gen: 0,             /* bumped when the window changes: answers in flight are stale */
	};

	/* ---- formatting ---- */

	const DASH = '–';

	/* What iopsd learned of a burst bucket it saw run out, as a sentence. */
	function burstNote(b) {
		if (!b) {
			return '';
		}
		const when = b.exhausted_time ? ' at ' + new Date(b.exhausted_time * 1000).toLocaleTimeString() : '';
		return ' A burst of ' + fmtNum(b.iops_estimate) + ' IOPS ran ' + fmtDuration(b.duration_seconds) +
			' and ran out' + when + '; the base is ' + fmtNum(b.base_iops_estimate) + ' IOPS.';
	}

	function fmtNum(v) {
		if (v === null || v === undefined || !isFinite(v)) {
			return DASH;
		}
		const a = Math.abs(v);
		if (a >= 1000) {
			return Math.round(v).toLocaleString('en-US');
		}
		return v.toFixed(a >= 100 || Number.isInteger(v) ? 0 : a >= 10 ? 1 : 2);
	}

	/* Axis labels: as few digits as the value needs (0.5, 2, 12.5, 1,200). */
	function fmtTick(v) {
		if (Math.abs(v) >= 1000) {
			return Math.round(v).toLocaleString('en-US');
		}
		return String(parseFloat(v.toPrecision(3)));
	}

	function fmtMs(sec) {
		if (sec === null || sec === undefined || !isFinite(sec)) {
			return DASH;
		}
		const ms = sec * 1000;
		if (ms > 0 && ms < 0.1) {
			return (ms * 1000).toFixed(0) + ' µs';
		}
		return fmtNum(ms) + ' ms';
	}

	const fmtMiB = (b) => (b === null || b === undefined ? DASH : fmtNum(b / MIB) + ' MiB/s');
	const fmtPct = (r) => (r === null || r === undefined || !isFinite(r) ? DASH : (r * 100).toFixed(r >= 0.995 || r === 0 ? 0 : 1) + '%');

	function fmtDuration(s) {
		if (s === null || s === undefined || !isFinite(s)) {
			return DASH;
		}
		s = Math.floor(s);
		if (s < 60) {
			return s + ' s';
		}
		if (s < 3600) {
			return Math.floor(s / 60) + ' min ' + (s % 60) + ' s';
		}
		if (s < 86400) {
			return Math.floor(s / 3600) + ' h ' + Math.floor((s % 3600) / 60) + ' min';
		}
		return Math.floor(s / 86400) + ' d ' + Math.floor((s % 86400) / 3600) + ' h';
	}

	function fmtClock(t, seconds) {
		const d = new Date(t * 1000);
		const p = (n) => String(n).padStart(2, '0');
		return p(d.getHours()) + ':' + p(d.getMinutes()) + (seconds ? ':' + p(d.getSeconds()) : '');
	}

	function fmtWindow(s) {
		return s < 60 || s % 60 ? s + ' s' : s < 3600 || s % 3600 ? s / 60 + ' min' : s / 3600 + ' h';
	}

	function fmtSize(b) {
		if (!b) {
			return '';
		}
		const units = ['B', 'KiB', 'MiB', 'GiB', 'TiB', 'PiB'];
		let i = 0;
		while (b >= 1024 && i < units.length - 1) {
			b /= 1024;
			i++;
		}
		return fmtNum(b) + ' ' + units[i];
	}

	/* ---- DOM ---- */

	function h(tag, attrs, ...children) {
		const e = document.createElement(tag);
		for (const [k, v] of Object.entries(attrs || {})) {
			if (v !== null && v !== undefined && v !== false) {
				e.setAttribute(k, v === true ? '' : v);
			}
		}
		for (const c of children.flat()) {
			if (c !== null && c !== undefined) {
				e.append(c);
			}
		}
		return e;
	}

	function setText(e, text) {
		if (e.textContent !== text) {
			e.textContent = text;
		}
	}

	let idCounter = 0;
	const newId = (prefix) => prefix + '-' + ++idCounter;

	/* A definition list of current values: [{key, label, cls}] -> {key: dd}. */
	function nowList(items) {
		const dl = h('dl', {class: 'now'});
		const dds = {};
		for (const it of items) {
			dds[it.key] = h('dd', {}, DASH);
			dds[it.key + 'Row'] = h('div', {class: it.cls || null}, h('dt', {}, it.label), dds[it.key]);
			dl.append(dds[it.key + 'Row']);
		}
		dds.list = dl;
		return dds;
	}

	/* ---- Chart.js ---- */

	/* Diagonal lines, for states that may overlap a tint. */
	function hatch(colour) {
		const c = document.createElement('canvas');
		c.width = c.height = 8;
		const ctx = c.getContext('2d');
		ctx.strokeStyle = colour;
		ctx.lineWidth = 1.5;
		ctx.beginPath();
		for (const o of [-8, 0, 8]) {
			ctx.moveTo(o, 8);
			ctx.lineTo(o + 8, 0);
		}
		ctx.stroke();
		return ctx.createPattern(c, 'repeat');
	}

	/* Shaded time ranges behind the datasets: chart.$bands = [{from, to, color}]. */
	const bandsPlugin = {
		id: 'iopsdBands',
		beforeDatasetsDraw(chart) {
			const bands = chart.$bands;
			const x = chart.scales.x;
			const a = chart.chartArea;
			if (!bands || !bands.length || !x || !a) {
				return;
			}
			const ctx = chart.ctx;
			ctx.save();
			ctx.beginPath();
			ctx.rect(a.left, a.top, a.right - a.left, a.bottom - a.top);
			ctx.clip();
			for (const b of bands) {
				const x0 = x.getPixelForValue(b.from);
				const x1 = x.getPixelForValue(b.to);
				ctx.fillStyle = b.color;
				ctx.fillRect(x0, a.top, Math.max(1, x1 - x0), a.bottom - a.top);
			}
			ctx.restore();
		},
	};

	/* Seconds between time axis labels: 4 to 6 labels on clock boundaries. */
	function timeStep() {
		return {60: 15, 300: 60, 900: 180, 3600: 600}[state.window] || Math.ceil(state.window / 5);
	}

	function timeScale() {
		return {
			type: 'linear',
			/* labels on whole clock steps only, not at the window's edges */
			afterBuildTicks: (scale) => {
				const step = timeStep();
				const ticks = [];
				for (let t = Math.ceil(scale.min / step) * step; t <= scale.max; t += step) {
					ticks.push({value: t});
				}
				scale.ticks = ticks;
			},
			ticks: {
				maxRotation: 0,
				callback: (v) => fmtClock(v, timeStep() < 60),
			},
			grid: {color: C.grid},
		};
	}

	function lineSet(id, label, colour, extra) {
		return Object.assign({
			id, label, data: [], borderColor: colour, backgroundColor: colour,
			borderWidth: 1.5, pointRadius: 0, pointHitRadius: 4, tension: 0, spanGaps: false,
		}, extra || {});
	}

	/* A horizontal guide in a stack of its own, drawn over the data (Chart.js
	 * draws lower `order` last). */
	function limitSet(id, label, colour, dash) {
		return lineSet(id, label, colour, {borderDash: dash, borderWidth: 2, stack: id, fill: false, order: -1});
	}

	function makeChart(canvas, datasets, yScales, fmtValue) {
		return new Chart(canvas, {
			type: 'line',
			data: {datasets},
			options: {
				animation: false,
				responsive: true,
				maintainAspectRatio: false,
				parsing: false,
				normalized: true,
				interaction: {mode: 'index', intersect: false},
				scales: Object.assign({x: timeScale()}, yScales),
				plugins: {
					legend: {display: false},
					decimation: {enabled: false},
					tooltip: {
						filter: (item) => !item.dataset.isGuide,
						callbacks: {
							title: (items) => (items.length ? fmtClock(items[0].parsed.x, true) : ''),
							label: (item) => item.dataset.label + ': ' + fmtValue(item.parsed.y),
						},
					},
				},
			},
			plugins: [bandsPlugin],
		});
	}

	function yScale(title, extra) {
		return Object.assign({
			beginAtZero: true,
			title: {display: true, text: title, color: C.muted},
			ticks: {callback: (v) => fmtTick(v), maxTicksLimit: 6},
			grid: {color: C.grid},
		}, extra || {});
	}

	let hatchThrottled = null;

	/* ---- the device view ---- */

	function panel(title, items, label) {
		const now = nowList(items);
		const canvas = h('canvas', {role: 'img', 'aria-label': label}, label);
		const note = h('p', {class: 'note', hidden: true});
		const fig = h('figure', {class: 'panel'},
			h('figcaption', {}, h('h4', {}, title), now.list),
			h('div', {class: 'chart'}, canvas), note);
		return {fig, now, canvas, note};
	}

	function deviceView(name) {
		const hid = newId('dev');
		const v = {name};
		v.title = h('h3', {id: hid}, name);
		v.sub = h('span', {class: 'sub'});
		v.badges = h('div', {class: 'badges', 'aria-live': 'polite'});

		v.iops = panel('IOPS', [
			{key: 'total', label: 'total', cls: 'total'},
			{key: 'read', label: 'read', cls: 'read'},
			{key: 'write', label: 'write', cls: 'write'},
			{key: 'limit', label: 'limit', cls: 'limit'},
		], 'IOPS of ' + name + ' over the chosen window: reads, writes and their total, with the declared limit');
		v.tput = panel('Throughput', [
			{key: 'total', label: 'total', cls: 'total'},
			{key: 'read', label: 'read', cls: 'read'},
			{key: 'write', label: 'write', cls: 'write'},
			{key: 'limit', label: 'limit', cls: 'limit'},
		], 'Throughput of ' + name + ' in MiB/s over the chosen window, with the declared limit');
		v.util = panel('Utilization and queue', [
			{key: 'util', label: 'util', cls: 'read'},
			{key: 'queue', label: 'queue (aqu-sz)', cls: 'third'},
			{key: 'member', label: 'busiest member', cls: 'write'},
		], 'Utilization in percent and queue depth of ' + name + ' over the chosen window');
		v.await = panel('Await', [
			{key: 'read', label: 'read', cls: 'read'},
			{key: 'write', label: 'write', cls: 'write'},
		], 'Average I/O wait of ' + name + ' in milliseconds over the chosen window');
		v.util.now.memberRow.hidden = true;

		v.el = h('article', {class: 'card device', 'data-device': name, 'aria-labelledby': hid},
			h('div', {class: 'card-head'}, v.title, v.sub, v.badges),
			h('div', {class: 'panels'}, v.iops.fig, v.tput.fig, v.util.fig, v.await.fig));

		const ioSets = () => [
			lineSet('read', 'read', C.read),
			lineSet('write', 'write', C.write),
			lineSet('total', 'total', C.total, {borderWidth: 2.5}),
			Object.assign(limitSet('limit', 'declared limit', C.limit, [7, 4]), {isGuide: true}),
			Object.assign(limitSet('estimate', 'detected ceiling', C.estimate, [2, 3]), {isGuide: true}),
		];
		v.iops.chart = makeChart(v.iops.canvas, ioSets(), {y: yScale('IOPS')}, fmtNum);
		v.tput.chart = makeChart(v.tput.canvas, ioSets(), {y: yScale('MiB/s')}, (y) => fmtNum(y) + ' MiB/s');
		v.util.chart = makeChart(v.util.canvas, [
			lineSet('util', 'util %', C.read, {yAxisID: 'y', borderWidth: 2}),
			lineSet('member', 'busiest member %', C.write, {yAxisID: 'y'}),
			lineSet('queue', 'aqu-sz', C.third, {yAxisID: 'q', borderWidth: 2}),
		], {
			y: yScale('util %', {max: 100}),
			q: yScale('aqu-sz', {position: 'right', grid: {display: false}}),
		}, fmtNum);
		v.await.chart = makeChart(v.await.canvas, [
			lineSet('read', 'read', C.read),
			lineSet('write', 'write', C.write),
		], {y: yScale('ms')}, (y) => fmtNum(y) + ' ms');
		return v;
	}

	/* Consecutive flagged points of `col` as time ranges. A raw sample at t
	 * covers the interval that ended at t; an averaged point the step that
	 * starts at t. A bucket counts when most of its seconds were flagged. */
	function bands(s, col, colour) {
		const flags = s.c[col];
		const out = [];
		if (!flags) {
			return out;
		}
		let cur = null;
		for (let i = 0; i < s.t.length; i++) {
			const t = s.t[i];
			const from = state.step ? t : t - (i > 0 ? Math.min(t - s.t[i - 1], 2 * state.interval) : state.interval);
			const to = state.step ? t + state.step : t;
			if (flags[i] !== null && flags[i] >= 0.5) {
				if (cur && from - cur.to < 0.5 * state.interval) {
					cur.to = to;
				} else {
					cur = {from, to, color: colour};
					out.push(cur);
				}
			}
		}
		return out;
	}

	/* Seconds flagged in `col` over the stored points. */
	function flaggedSeconds(s, col) {
		const flags = s.c[col];
		let sum = 0;
		for (let i = 0; flags && i < s.t.length; i++) {
			const dt = state.step || (i > 0 ? Math.min(s.t[i] - s.t[i - 1], 2 * state.interval) : state.interval);
			sum += (flags[i] || 0) * dt;
		}
		return sum;
	}

	function points(s, col, scale) {
		const ys = s.c[col];
		const out = new Array(s.t.length);
		for (let i = 0; i < s.t.length; i++) {
			const y = ys ? ys[i] : null;
			out[i] = {x: s.t[i], y: y === null || y === undefined ? null : y * scale};
		}
		return out;
	}

	function guide(ds, value, from, to) {
		ds.data = value > 0 ? [{x: from, y: value}, {x: to, y: value}] : [];
		ds.hidden = !(value > 0);
	}

	function setRange(chart, from, to, bandList) {
		chart.options.scales.x.min = from;
		chart.options.scales.x.max = to;
		chart.$bands = bandList;
	}

	function last(a) {
		return a && a.length ? a[a.length - 1] : null;
	}

	function updateDevice(v, s, meta) {
		const to = state.time;
		const from = to - state.window;
		const limits = (meta && meta.limits) || s.limits || {};
		const ceiling = (meta && meta.ceiling) || s.ceiling || {};
		const rates = meta && meta.rates;
		const iopsLimit = limits.iops || 0;
		const bpsLimit = limits.throughput_bytes_per_second || 0;
		const atLimit = bands(s, 'at_limit', C.atLimit);
		const throttled = bands(s, 'throttled', hatchThrottled);
		const ioBands = atLimit.concat(throttled);

		/* header */
		const sub = [];
		if (meta) {
			sub.push(meta.kind);
			if (meta.mountpoints && meta.mountpoints.length) {
				sub.push(meta.mountpoints.join(', '));
			}
			if (meta.members && meta.members.length) {
				sub.push('members ' + meta.members.join(', '));
			}
			if (meta.model) {
				sub.push(meta.model);
			}
			if (meta.size_bytes) {
				sub.push(fmtSize(meta.size_bytes));
			}
		}
		const lim = [];
		if (iopsLimit) {
			lim.push(fmtNum(iopsLimit) + ' IOPS');
		}
		if (bpsLimit) {
			lim.push(fmtMiB(bpsLimit));
		}
		sub.push(lim.length ? 'limit ' + lim.join(', ') : 'no declared limit');
		setText(v.sub, sub.filter(Boolean).join(' · '));

		const badges = [];
		const lastAt = last(s.c.at_limit);
		if (lastAt !== null && lastAt >= 0.5) {
			badges.push(['at-limit', 'at limit']);
		}
		if (ceiling.throttled) {
			badges.push(['throttled', 'throttled']);
		}
		if (ceiling.saturated) {
			badges.push(['saturated', 'saturated']);
		}
		if (ceiling.burst_balance_ratio !== null && ceiling.burst_balance_ratio !== undefined) {
			badges.push(['', 'burst credits ' + fmtPct(ceiling.burst_balance_ratio)]);
		}
		if (ceiling.held_by && ceiling.held_by.length) {
			badges.push(['throttled', 'held by ' + ceiling.held_by.join(', ')]);
		}
		if (ceiling.burst) {
			badges.push(['', 'burst ' + fmtNum(ceiling.burst.iops_estimate) + ' → base ' +
				fmtNum(ceiling.burst.base_iops_estimate) + ' IOPS']);
		}
		const badgeText = badges.map((b) => b[1]).join('|');
		if (v.badgeText !== badgeText) {
			v.badgeText = badgeText;
			v.badges.replaceChildren(...badges.map((b) => h('span', {class: 'badge ' + b[0]}, b[1])));
		}

		/* IOPS */
		const r = rates || null;
		const cur = {
			ri: r ? r.iops.read : last(s.c.read_iops),
			wi: r ? r.iops.write : last(s.c.write_iops),
			rb: r ? r.throughput_bytes_per_second.read : last(s.c.read_bytes_per_second),
			wb: r ? r.throughput_bytes_per_second.write : last(s.c.write_bytes_per_second),
			util: r ? r.utilization : last(s.c.utilization),
			queue: r ? r.queue_depth : last(s.c.queue_depth),
			ra: r ? r.await_seconds.read : last(s.c.read_await_seconds),
			wa: r ? r.await_seconds.write : last(s.c.write_await_seconds),
		};
		const n = v.iops.now;
		setText(n.read, fmtNum(cur.ri) + '/s');
		setText(n.write, fmtNum(cur.wi) + '/s');
		setText(n.total, fmtNum(cur.ri === null ? null : cur.ri + cur.wi) + '/s');
		setText(n.limit, iopsLimit ? fmtNum(iopsLimit) + ' (' + fmtPct(limits.iops_ratio) + ')' : 'none');
		n.limitRow.classList.toggle('over', iopsLimit > 0 && limits.iops_ratio >= 0.95);
		const ds = v.iops.chart.data.datasets;
		ds[0].data = points(s, 'read_iops', 1);
		ds[1].data = points(s, 'write_iops', 1);
		ds[2].data = points(s, 'iops', 1);
		guide(ds[3], iopsLimit, from, to);
		guide(ds[4], iopsLimit ? 0 : ceiling.iops_estimate, from, to);
		v.iops.chart.options.scales.y.suggestedMax = Math.max(iopsLimit, ceiling.iops_estimate || 0) * 1.15 || undefined;
		setRange(v.iops.chart, from, to, ioBands);

		const atSec = flaggedSeconds(s, 'at_limit');
		const total = limits.at_ceiling_seconds || {};
		const since = Math.max(total.iops || 0, total.throughput || 0);
		if (iopsLimit || bpsLimit) {
			v.iops.note.hidden = false;
			setText(v.iops.note, 'At the limit ' + fmtDuration(atSec) + ' of the last ' + fmtWindow(state.window) +
				' (' + fmtPct(atSec / state.window) + '); ' + fmtDuration(since) + ' since iopsd started.');
		} else if (ceiling.iops_estimate) {
			v.iops.note.hidden = false;
			setText(v.iops.note, 'No declared limit; a ceiling near ' + fmtNum(ceiling.iops_estimate) +
				' IOPS was detected (dotted line).' + burstNote(ceiling.burst));
		} else {
			v.iops.note.hidden = true;
		}

		/* throughput */
		const t = v.tput.now;
		setText(t.total, fmtMiB(cur.rb === null ? null : cur.rb + cur.wb));
		setText(t.read, fmtMiB(cur.rb));
		setText(t.write, fmtMiB(cur.wb));
		setText(t.limit, bpsLimit ? fmtMiB(bpsLimit) + ' (' + fmtPct(limits.throughput_ratio) + ')' : 'none');
		t.limitRow.classList.toggle('over', bpsLimit > 0 && limits.throughput_ratio >= 0.95);
		const dt = v.tput.chart.data.datasets;
		dt[0].data = points(s, 'read_bytes_per_second', 1 / MIB);
		dt[1].data = points(s, 'write_bytes_per_second', 1 / MIB);
		dt[2].data = dt[0].data.map((p, i) => ({x: p.x, y: p.y === null ? null : p.y + (dt[1].data[i].y || 0)}));
		guide(dt[3], bpsLimit / MIB, from, to);
		guide(dt[4], bpsLimit ? 0 : (ceiling.throughput_estimate_bytes_per_second || 0) / MIB, from, to);
		v.tput.chart.options.scales.y.suggestedMax = (bpsLimit / MIB) * 1.15 || undefined;
		setRange(v.tput.chart, from, to, ioBands);

		/* utilization and queue */
		const u = v.util.now;
		setText(u.util, fmtPct(cur.util));
		setText(u.queue, fmtNum(cur.queue));
		const du = v.util.chart.data.datasets;
		du[0].data = points(s, 'utilization', 100);
		const member = s.c.member_utilization && s.c.member_utilization.some((x) => x !== null);
		du[1].data = member ? points(s, 'member_utilization', 100) : [];
		u.memberRow.hidden = !member;
		if (member) {
			setText(u.member, fmtPct(last(s.c.member_utilization)));
		}
		du[2].data = points(s, 'queue_depth', 1);
		setRange(v.util.chart, from, to, bands(s, 'saturated', C.saturated));

		/* await */
		const a = v.await.now;
		setText(a.read, fmtMs(cur.ra));
		setText(a.write, fmtMs(cur.wa));
		const da = v.await.chart.data.datasets;
		da[0].data = points(s, 'read_await_seconds', 1000);
		da[1].data = points(s, 'write_await_seconds', 1000);
		setRange(v.await.chart, from, to, ioBands);

		for (const p of [v.iops, v.tput, v.util, v.await]) {
			p.chart.update('none');
		}
	}

	/* ---- the probe view ---- */

	/* fio's percentile keys, those that fit a phone-width bar chart */
	const PCTS = ['1.000000', '5.000000', '10.000000', '20.000000', '50.000000', '80.000000', '90.000000',
		'95.000000', '99.000000', '99.500000', '99.900000', '99.990000'];

	function probeView(p) {
		const hid = newId('probe');
		const v = {name: p.name};
		v.title = h('h3', {id: hid}, p.name);
		v.sub = h('span', {class: 'sub'});
		v.badges = h('div', {class: 'badges', 'aria-live': 'polite'});
		v.error = h('p', {class: 'error', hidden: true});
		v.lat = panel('Latency over time', [
			{key: 'p50', label: 'p50', cls: 'read'},
			{key: 'p99', label: 'p99', cls: 'write'},
			{key: 'iops', label: 'IOPS'},
		], 'Latency percentiles 50 and 99 of probe ' + p.name + ' per run, milliseconds, log scale');
		v.dist = panel('Last run: latency by percentile', [
			{key: 'when', label: 'ran'},
			{key: 'ops', label: 'I/Os'},
			{key: 'max', label: 'max'},
			{key: 'errors', label: 'errors'},
		], 'Completion latency percentiles of the last run of probe ' + p.name + ', milliseconds, log scale');
		v.el = h('article', {class: 'card probe', 'data-probe': p.name, 'aria-labelledby': hid},
			h('div', {class: 'card-head'}, v.title, v.sub, v.badges), v.error,
			h('div', {class: 'panels'}, v.lat.fig, v.dist.fig));

		const logY = (title) => yScale(title, {
			type: 'logarithmic',
			beginAtZero: false,
			ticks: {callback: (val) => (Number.isInteger(Math.round(Math.log10(val) * 1e6) / 1e6) ? fmtTick(val) : ''),
				maxTicksLimit: 8},
		});
		v.lat.chart = makeChart(v.lat.canvas, [
			lineSet('p50', 'p50', C.read, {pointRadius: 2, borderWidth: 2}),
			lineSet('p99', 'p99', C.write, {pointRadius: 2, borderWidth: 2}),
		], {y: logY('ms')}, (y) => fmtNum(y) + ' ms');
		v.dist.chart = new Chart(v.dist.canvas, {
			type: 'bar',
			data: {labels: PCTS.map((k) => 'p' + parseFloat(k)), datasets: []},
			options: {
				animation: false,
				responsive: true,
				maintainAspectRatio: false,
				scales: {
					x: {grid: {display: false}, ticks: {maxRotation: 0, autoSkip: true}},
					y: logY('ms'),
				},
				plugins: {
					legend: {display: true, position: 'top', align: 'end', labels: {boxWidth: 12, color: C.text}},
					tooltip: {callbacks: {label: (item) => item.dataset.label + ': ' + fmtNum(item.parsed.y) + ' ms'}},
				},
			},
		});
		return v;
	}

	/* The fio-style per-op sections of a last run that did I/O. */
	function runOps(run) {
		const out = [];
		const fio = run && run.fio;
		if (!fio) {
			return out;
		}
		for (const [op, key, colour] of [['read', 'clat_ns', C.read], ['write', 'clat_ns', C.write], ['sync', 'lat_ns', C.third]]) {
			const lat = fio[op] && fio[op][key];
			if (lat && lat.N > 0) {
				out.push({op, lat, colour});
			}
		}
		return out;
	}

	function updateProbe(v, p, s) {
		const run = p.last_run;
		const sub = [p.rw + ' on ' + p.target];
		const dev = probeDevice(p);
		if (dev) {
			sub.push(dev);
		}
		sub.push('every ' + fmtDuration(p.interval_seconds));
		sub.push(p.runs_total + ' runs, ' + p.failures_total + ' failed');
		setText(v.sub, sub.join(' · '));

		const failing = run && !run.success;
		const badge = !run ? ['', 'no run yet'] : failing ? ['bad', 'failing'] : ['ok', 'ok'];
		if (v.badgeText !== badge[1]) {
			v.badgeText = badge[1];
			v.badges.replaceChildren(h('span', {class: 'badge ' + badge[0]}, badge[1]));
		}
		v.error.hidden = !failing;
		if (failing) {
			setText(v.error, 'Last run failed: ' + (run.error || 'unknown error'));
		}

		const n = v.lat.now;
		setText(n.p50, fmtMs(last(s.p50)));
		setText(n.p99, fmtMs(last(s.p99)));
		setText(n.iops, fmtNum(last(s.iops)));
		const to = state.time;
		const from = to - state.window;
		const ds = v.lat.chart.data.datasets;
		/* a log scale has no zero */
		const ms = (v) => (v > 0 ? v * 1000 : null);
		ds[0].data = s.t.map((t, i) => ({x: t, y: ms(s.p50[i])}));
		ds[1].data = s.t.map((t, i) => ({x: t, y: ms(s.p99[i])}));
		setRange(v.lat.chart, from, to, []);
		v.lat.chart.update('none');

		const d = v.dist.now;
		const ops = runOps(run);
		setText(d.when, run ? fmtDuration(Math.max(0, state.time - run.time)) + ' ago' : DASH);
		let nOps = 0;
		let errors = 0;
		let max = null;
		for (const o of ops) {
			nOps += o.lat.N;
			max = Math.max(max || 0, o.lat.max);
		}
		for (const o of Object.values((run && run.ops) || {})) {
			errors += o.errors || 0;
		}
		setText(d.ops, run ? fmtNum(nOps) : DASH);
		setText(d.max, max === null ? DASH : fmtMs(max / 1e9));
		setText(d.errors, run ? String(errors) : DASH);
		d.errorsRow.classList.toggle('over', errors > 0);
		const key = run ? String(run.time) : '';
		if (v.distKey !== key) {
			v.distKey = key;
			v.dist.chart.data.datasets = ops.filter((o) => o.lat.percentile).map((o) => ({
				label: o.op,
				data: PCTS.map((k) => (o.lat.percentile[k] > 0 ? o.lat.percentile[k] / 1e6 : null)),
				backgroundColor: o.colour,
				borderWidth: 0,
			}));
			v.dist.chart.update('none');
		}
	}

	/* ---- data ---- */

	async function getJSON(path) {
		const r = await fetch(path, {cache: 'no-store', credentials: 'same-origin'});
		let body = null;
		try {
			body = await r.json();
		} catch (e) {
			body = null;
		}
		if (!r.ok) {
			const e = new Error(path.split('?')[0] + ': ' + r.status + (body && body.error ? ' ' + body.error : ''));
			e.status = r.status;
			throw e;
		}
		return body;
	}

	/* A window the configured history can fill: the longest choice that
	 * fits, or the whole history when it is shorter than a minute. */
	function fitWindow() {
		const sel = $('window');
		if (state.window > state.historyMax) {
			const fits = [...sel.options].map((o) => parseInt(o.value, 10)).filter((v) => v <= state.historyMax);
			if (!fits.length) {
				sel.append(h('option', {value: String(state.historyMax)}, fmtWindow(state.historyMax)));
				fits.push(state.historyMax);
			}
			state.window = Math.max(...fits);
		}
		sel.value = String(state.window);
	}

	function chooseStep() {
		const s = Math.max(Math.ceil(state.window / POINTS), state.minStep);
		const step = s > state.interval ? s : 0;
		if (step !== state.step) {
			state.step = step;
			forget();
		}
	}

	/* Drop what is stored: the next update loads whole windows again. */
	function forget() {
		state.series.clear();
		state.probeSeries.clear();
		state.probesLoaded = false;
	}

	/* The newest point stored for any device, 0 when none. */
	function newestPoint() {
		let t = 0;
		for (const s of state.series.values()) {
			t = Math.max(t, last(s.t) || 0);
		}
		return t;
	}

	function historyPath(win, device) {
		return '/api/v1/history?window=' + win + 's' + (state.step ? '&step=' + state.step + 's' : '') +
			(device ? '&device=' + encodeURIComponent(device) : '');
	}

	/* The whole window of one device (and of every probe, which come along):
	 * one answer per device keeps each small, and hidden devices cost
	 * nothing. */
	async function loadWindow(name) {
		try {
			return await getJSON(historyPath(state.window, name));
		} catch (e) {
			const m = e.status === 400 && /step=(\d+)s/.exec(e.message);
			if (m) {
				/* more points than the daemon answers at once: its step */
				state.minStep = parseInt(m[1], 10);
				chooseStep();
				return getJSON(historyPath(state.window, name));
			}
			if (e.status === 404) {
				return null; /* the device went away meanwhile */
			}
			throw e;
		}
	}

	/* The seconds since the newest stored point, for every device and probe:
	 * from before that point, so that it (an averaged step that was still
	 * filling) is replaced and the rest appended. */
	function increment() {
		const unit = state.step || state.interval;
		const need = Math.ceil(state.time - newestPoint() + unit) + 5;
		return getJSON(historyPath(Math.max(1, Math.min(need, state.historyMax))));
	}

	function mergeDevice(d, answer, full) {
		const cols = Object.keys(d.series).filter((k) => k !== 'time');
		let s = state.series.get(d.name);
		if (full) {
			s = {t: [], c: {}};
			state.series.set(d.name, s);
		}
		s.limits = d.limits;
		s.ceiling = d.ceiling;
		const t = d.series.time;
		let start = 0;
		if (!full && state.step) {
			/* the first bucket was cut by the window start: we have it whole */
			while (start < t.length && t[start] < answer.from) {
				start++;
			}
		}
		if (start < t.length) {
			let keep = s.t.length;
			while (keep > 0 && s.t[keep - 1] >= t[start] - 1e-6) {
				keep--;
			}
			s.t.length = keep;
			for (const k of Object.keys(s.c)) {
				s.c[k].length = keep;
			}
			for (const k of cols) {
				if (!s.c[k]) {
					s.c[k] = new Array(keep).fill(null);
				}
			}
			for (let i = start; i < t.length; i++) {
				s.t.push(t[i]);
				for (const k of Object.keys(s.c)) {
					const col = d.series[k];
					s.c[k].push(col ? col[i] : null);
				}
			}
		}
		trim(s, [s.t].concat(Object.values(s.c)));
	}

	function trim(s, arrays) {
		const oldest = state.time - state.window - (state.step || state.interval);
		let n = 0;
		while (n < s.t.length && s.t[n] < oldest) {
			n++;
		}
		if (n > 0) {
			for (const a of arrays) {
				a.splice(0, n);
			}
		}
	}

	function mergeProbe(p, full) {
		let s = state.probeSeries.get(p.name);
		if (!s || full) {
			s = {t: [], p50: [], p99: [], iops: []};
			state.probeSeries.set(p.name, s);
		}
		const x = p.series;
		for (let i = 0; i < x.time.length; i++) {
			if (x.time[i] > (last(s.t) || 0)) {
				s.t.push(x.time[i]);
				s.p50.push(x.p50_seconds[i]);
				s.p99.push(x.p99_seconds[i]);
				s.iops.push(x.iops[i]);
			}
		}
		trim(s, [s.t, s.p50, s.p99, s.iops]);
	}

	/* ---- selection ---- */

	/* The device a probe's target lives on: the daemon's answer, else the
	 * device with the longest mount point that contains the target. */
	function probeDevice(p) {
		if (p.device) {
			return p.device;
		}
		let best = '';
		let bestLen = -1;
		for (const [name, m] of state.meta) {
			for (const mp of m.mountpoints || []) {
				const inside = p.target === mp || p.target.startsWith(mp.endsWith('/') ? mp : mp + '/');
				if (inside && mp.length > bestLen) {
					best = name;
					bestLen = mp.length;
				}
			}
		}
		return best;
	}

	function defaultSelected(name) {
		const m = state.meta.get(name);
		if (!m) {
			return false;
		}
		return !!(m.limits && (m.limits.iops || m.limits.throughput_bytes_per_second)) ||
			state.probes.some((p) => probeDevice(p) === name) || (m.mountpoints && m.mountpoints.length > 0);
	}

	function isShown(name) {
		if (state.selected) {
			return state.selected.has(name);
		}
		const names = [...state.meta.keys()];
		if (!names.some(defaultSelected)) {
			return true;
		}
		return defaultSelected(name);
	}

	function deviceNames() {
		const names = new Set([...state.meta.keys(), ...state.series.keys()]);
		const limited = (n) => {
			const m = state.meta.get(n);
			return m && m.limits && (m.limits.iops || m.limits.throughput_bytes_per_second) ? 0 : 1;
		};
		return [...names].sort((a, b) => limited(a) - limited(b) || a.localeCompare(b, 'en', {numeric: true}));
	}

	function renderFilter() {
		const list = $('filter-list');
		const names = deviceNames();
		const key = names.join('\n');
		if (list.dataset.key !== key) {
			list.dataset.key = key;
			list.replaceChildren(...names.map((n) => {
				const m = state.meta.get(n);
				const info = m ? [m.kind].concat(m.mountpoints || []).join(' ') : '';
				return h('label', {}, h('input', {type: 'checkbox', value: n}), n, ' ', h('small', {}, info));
			}));
		}
		let shown = 0;
		for (const box of list.querySelectorAll('input')) {
			box.checked = isShown(box.value);
			shown += box.checked ? 1 : 0;
		}
		setText($('filter-count'), '(' + shown + ' of ' + names.length + ')');
	}

	function setSelected(set) {
		state.selected = set;
		saveURL();
		render();
		schedule(0); /* load the window of a device shown now */
	}

	/* ---- the URL keeps the view: ?window=300&devices=a,b ---- */

	function loadURL() {
		const q = new URLSearchParams(location.search);
		const w = parseInt(q.get('window'), 10);
		if ([60, 300, 900, 3600].includes(w)) {
			state.window = w;
		}
		if (q.has('devices')) {
			state.selected = new Set(q.get('devices').split(',').filter(Boolean));
		}
	}

	function saveURL() {
		const q = new URLSearchParams();
		if (state.window !== 300) {
			q.set('window', String(state.window));
		}
		if (state.selected) {
			q.set('devices', [...state.selected].join(','));
		}
		const s = q.toString();
		history.replaceState(null, '', location.pathname + (s ? '?' + s : ''));
	}

	/* ---- rendering ---- */

	function renderHeader(status, probes) {
		setText($('host'), status.hostname || location.hostname);
		setText($('uptime'), fmtDuration(status.uptime_seconds));
		setText($('version'), status.version);
		setText($('updated'), status.last_sample_time ? fmtClock(status.last_sample_time, true) : DASH);
		const health = $('health');
		health.className = 'health ' + (status.healthy ? 'ok' : 'bad');
		setText(health, status.healthy ? 'Healthy: sampling and every probe on schedule.'
			: 'Unhealthy: ' + (status.health_reason || 'unknown reason'));

		const failing = probes.filter((p) => p.last_run && !p.last_run.success);
		const box = $('failing');
		box.hidden = failing.length === 0;
		const text = failing.length ? (failing.length === 1 ? 'Failing probe: ' : 'Failing probes: ') +
			failing.map((p) => p.name + ' (' + (p.last_run.error || 'failed') + ')').join('; ') : '';
		setText(box, text);

		const sel = $('window');
		for (const o of sel.options) {
			o.disabled = parseInt(o.value, 10) > state.historyMax;
		}
	}

	function render() {
		renderFilter();
		const list = $('device-list');
		const wanted = deviceNames().filter(isShown).filter((n) => state.series.has(n));
		for (const [name, v] of state.views) {
			if (!wanted.includes(name)) {
				for (const p of [v.iops, v.tput, v.util, v.await]) {
					p.chart.destroy();
				}
				v.el.remove();
				state.views.delete(name);
			}
		}
		wanted.forEach((name, i) => {
			let v = state.views.get(name);
			if (!v) {
				v = deviceView(name);
				state.views.set(name, v);
			}
			if (list.children[i] !== v.el) {
				list.insertBefore(v.el, list.children[i] || null);
			}
			updateDevice(v, state.series.get(name), state.meta.get(name));
		});
		$('no-devices').hidden = wanted.length > 0;

		const plist = $('probe-list');
		const pnames = state.probes.map((p) => p.name);
		for (const [name, v] of state.probeViews) {
			if (!pnames.includes(name)) {
				v.lat.chart.destroy();
				v.dist.chart.destroy();
				v.el.remove();
				state.probeViews.delete(name);
			}
		}
		state.probes.forEach((p, i) => {
			let v = state.probeViews.get(p.name);
			if (!v) {
				v = probeView(p);
				state.probeViews.set(p.name, v);
			}
			if (plist.children[i] !== v.el) {
				plist.insertBefore(v.el, plist.children[i] || null);
			}
			updateProbe(v, p, state.probeSeries.get(p.name) || {t: [], p50: [], p99: [], iops: []});
		});
		$('no-probes').hidden = state.probes.length > 0;
	}

	function showError(msg) {
		const e = $('error');
		e.hidden = !msg;
		setText(e, msg ? 'Cannot update: ' + msg + '. Retrying.' : '');
	}

	/* One update. Returns false when its answers were dropped because the
	 * window changed meanwhile. */
	async function tick() {
		if (state.busy || state.paused || document.hidden) {
			return true;
		}
		const gen = state.gen;
		state.busy = true;
		try {
			const [status, probes, devices] = await Promise.all([
				getJSON('/api/v1/status'), getJSON('/api/v1/probes'), getJSON('/api/v1/devices'),
			]);
			if (gen !== state.gen) {
				return false;
			}
			if (state.time === 0) {
				state.historyMax = status.history_seconds || 3600;
				fitWindow();
			}
			state.interval = status.sample_interval_seconds || 1;
			state.historyMax = status.history_seconds || 3600;
			state.meta = new Map(devices.devices.map((d) => [d.name, d]));
			state.probes = probes.probes;
			chooseStep();
			if (status.time - newestPoint() >= state.window) {
				forget(); /* away for longer than the window (a hidden tab) */
			}
			state.time = status.time;

			/* whole windows for the devices shown that have none yet; the
			 * probes come with the first (or with any device's) */
			const missing = deviceNames().filter((n) => isShown(n) && state.meta.has(n) && !state.series.has(n));
			if (!state.probesLoaded && !missing.length && state.probes.length && state.meta.size) {
				missing.push([...state.meta.keys()][0]);
			}
			const windows = await Promise.all(missing.map(loadWindow));
			if (gen !== state.gen) {
				return false;
			}
			for (const w of windows.filter(Boolean)) {
				for (const d of w.devices) {
					mergeDevice(d, w, true);
				}
				for (const p of w.probes) {
					mergeProbe(p, true);
				}
				state.probesLoaded = true;
			}

			/* then the new seconds of everything loaded */
			const inc = await increment();
			if (gen !== state.gen) {
				return false;
			}
			state.time = inc.time;
			for (const d of inc.devices) {
				if (state.series.has(d.name)) {
					mergeDevice(d, inc, false);
				}
			}
			for (const p of inc.probes) {
				mergeProbe(p, false);
			}
			for (const name of [...state.series.keys()]) {
				if (!state.meta.has(name) && state.series.get(name).t.length === 0) {
					state.series.delete(name);
				}
			}
			renderHeader(status, state.probes);
			render();
			showError(null);
		} catch (e) {
			showError(e.message || String(e));
		} finally {
			state.busy = false;
		}
		return true;
	}

	/* One timer at a time: each run re-arms it for the next sample. */
	function schedule(delay) {
		clearTimeout(state.timer);
		state.timer = setTimeout(run, delay);
	}

	async function run() {
		const started = Date.now();
		const current = await tick();
		schedule(current ? Math.max(200, state.interval * 1000 - (Date.now() - started)) : 0);
	}

	/* ---- controls ---- */

	function setup() {
		hatchThrottled = hatch(C.throttled);
		Chart.defaults.color = C.text;
		Chart.defaults.borderColor = C.grid;
		Chart.defaults.font.family = rootStyle.getPropertyValue('font-family');
		loadURL();
		$('window').value = String(state.window);

		$('window').addEventListener('change', (e) => {
			state.window = parseInt(e.target.value, 10);
			state.gen++;
			state.minStep = 0;
			forget();
			chooseStep();
			saveURL();
			schedule(0);
		});
		$('filter-list').addEventListener('change', (e) => {
			if (e.target.type !== 'checkbox') {
				return;
			}
			const set = new Set(deviceNames().filter(isShown));
			if (e.target.checked) {
				set.add(e.target.value);
			} else {
				set.delete(e.target.value);
			}
			setSelected(set);
		});
		$('filter-all').addEventListener('click', () => setSelected(new Set(deviceNames())));
		$('filter-none').addEventListener('click', () => setSelected(new Set()));
		$('filter-default').addEventListener('click', () => setSelected(null));
		/* the pop-up closes with Escape (focus back on its summary) or a click elsewhere */
		const filter = $('filter');
		filter.addEventListener('keydown', (e) => {
			if (e.key === 'Escape' && filter.open) {
				filter.open = false;
				filter.querySelector('summary').focus();
			}
		});
		document.addEventListener('click', (e) => {
			if (filter.open && !filter.contains(e.target)) {
				filter.open = false;
			}
		});
		$('pause').addEventListener('click', (e) => {
			state.paused = !state.paused;
			e.target.setAttribute('aria-pressed', String(state.paused));
			e.target.textContent = state.paused ? 'Resume' : 'Pause';
			if (!state.paused) {
				schedule(0);
			}
		});
		document.addEventListener('visibilitychange', () => {
			if (!document.hidden) {
				schedule(0);
			}
		});
		schedule(0);
	}

	if (typeof Chart === 'undefined') {
		showError('the chart library did not load');
		return;
	}
	setup();
}());
