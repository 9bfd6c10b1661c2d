/* The history report's charts and filters: draws each row's runs with uPlot from the page's JSON and, when a
   filter changes, draws again from the runs it keeps (lines, CI bands, axis ranges, change points, tables
   and counts alike). Each chart's figure says how many points it draws (data-points); the body says how
   many runs, points and change points are shown (data-runs-shown, data-points-drawn, data-changes-shown). */
(function () {
  'use strict';
  var data = JSON.parse(document.getElementById('history-data').textContent);
  var runs = data.runs;
  var DAY = 86400;
  var BLUE = '#1f77b4';
  var RED = '#d62728';
  var selects = Array.prototype.slice.call(document.querySelectorAll('select[data-filter]'));
  var scenarioSelect = document.getElementById('scenario-filter');
  var from = document.getElementById('from');
  var to = document.getElementById('to');

  var runScenarios = runs.map(function () { return {}; });
  data.rows.forEach(function (row) {
    row.points.forEach(function (p) { runScenarios[p[0]][row.scenario] = true; });
  });
  var changesByRow = {};
  data.changes.forEach(function (c, i) {
    c.index = i;
    (changesByRow[c.row] = changesByRow[c.row] || []).push(c);
  });

  function num(v) { return v === null || v === undefined ? '—' : String(Number(v.toPrecision(4))); }
  function pct(v) { return (v >= 0 ? '+' : '') + (100 * v).toFixed(1); }
  function day(input, end) {
    if (!input.value) { return end ? Infinity : -Infinity; }
    var t = Date.parse(input.value + 'T00:00:00Z') / 1000;
    return end ? t + DAY : t;
  }

  function shownRuns() {
    var lo = day(from, false);
    var hi = day(to, true);
    var scenario = scenarioSelect.value;
    return runs.map(function (run, i) {
      if (run.t < lo || run.t >= hi) { return false; }
      if (scenario && !runScenarios[i][scenario]) { return false; }
      return selects.every(function (s) { return s.value === '' || run.env[s.dataset.filter] === s.value; });
    });
  }

  function drawChanges(u, chart) {
    var ctx = u.ctx;
    var ratio = window.devicePixelRatio || 1;
    ctx.save();
    ctx.strokeStyle = RED;
    ctx.fillStyle = RED;
    ctx.lineWidth = 1.5 * ratio;
    ctx.setLineDash([5 * ratio, 4 * ratio]);
    ctx.font = (11 * ratio) + 'px system-ui, sans-serif';
    chart.visible.forEach(function (c) {
      var x = u.valToPos((runs[c.before].t + runs[c.after].t) / 2, 'x', true);
      ctx.beginPath();
      ctx.moveTo(x, u.bbox.top);
      ctx.lineTo(x, u.bbox.top + u.bbox.height);
      ctx.stroke();
      var label = pct(c.step) + '% [' + pct(c.low) + ', ' + pct(c.high) + ']';
      var left = x > u.bbox.left + u.bbox.width / 2;  // a label right of the middle goes left of its line
      ctx.textAlign = left ? 'right' : 'left';
      ctx.fillText(label, x + (left ? -4 : 4) * ratio, u.bbox.top + 12 * ratio);
    });
    ctx.restore();
  }

  function showRun(chart, i) {
    var at = chart.at;
    while (at.firstChild) { at.removeChild(at.firstChild); }
    if (i === null || i === undefined || i < 0 || i >= chart.drawn.length) { return; }
    var p = chart.drawn[i];
    var run = runs[p[0]];
    var link = document.createElement('a');
    link.href = run.href;
    link.textContent = run.name;
    at.appendChild(document.createTextNode('run '));
    at.appendChild(link);
    at.appendChild(document.createTextNode(' · ' + run.started + ' · ' + num(p[1]) + ' [' + num(p[2]) + ', ' +
      num(p[3]) + '] ' + data.unit));
  }

  function makeChart(figure) {
    var index = Number(figure.dataset.row);
    var chart = { figure: figure, index: index, row: data.rows[index], drawn: [], visible: [],
      at: figure.querySelector('.at') };
    var value = function (u, v) { return num(v); };
    var opts = {
      width: 540,
      height: 220,
      legend: { show: false },
      tzDate: function (ts) { return uPlot.tzDate(new Date(ts * 1e3), 'Etc/UTC'); },
      scales: { x: { time: true } },
      series: [
        { label: 'started (UTC)' },
        { label: 'median', stroke: BLUE, width: 1.5, value: value, points: { size: 6, fill: BLUE } },
        { label: 'CI high', stroke: 'rgba(31,119,180,0.35)', width: 1, value: value, points: { show: false } },
        { label: 'CI low', stroke: 'rgba(31,119,180,0.35)', width: 1, value: value, points: { show: false } }
      ],
      bands: [{ series: [2, 3], fill: 'rgba(31,119,180,0.15)' }],
      axes: [{}, { label: data.metric + ' (' + data.unit + ')', size: 60 }],
      hooks: {
        draw: [function (u) { drawChanges(u, chart); }],
        setCursor: [function (u) { if (u.cursor.idx !== null) { showRun(chart, u.cursor.idx); } }]
      }
    };
    chart.plot = new uPlot(opts, [[], [], [], []], figure.querySelector('.plot'));
    figure.uplot = chart.plot;  // what the chart draws, for a test to read (its data and scales)
    return chart;
  }

  var charts = Array.prototype.slice.call(document.querySelectorAll('figure.chart')).map(makeChart);

  function redraw(chart, shown) {
    chart.drawn = chart.row.points.filter(function (p) { return shown[p[0]]; });
    chart.visible = (changesByRow[chart.index] || []).filter(function (c) { return shown[c.before] && shown[c.after]; });
    var d = chart.drawn;
    chart.plot.setData([
      d.map(function (p) { return runs[p[0]].t; }),
      d.map(function (p) { return p[1]; }),
      d.map(function (p) { return p[3]; }),
      d.map(function (p) { return p[2]; })
    ]);
    chart.figure.hidden = d.length === 0;
    chart.figure.dataset.points = String(d.length);
    showRun(chart, d.length - 1);
    return d.length;
  }

  function showRows(selector, shown) {
    var count = 0;
    document.querySelectorAll(selector).forEach(function (tr) {
      tr.hidden = !shown[Number(tr.dataset.run)];
      if (!tr.hidden) { count += 1; }
    });
    return count;
  }

  function showChanges(shown) {
    var count = 0;
    document.querySelectorAll('tr[data-change]').forEach(function (tr) {
      var c = data.changes[Number(tr.dataset.change)];
      tr.hidden = !(shown[c.before] && shown[c.after]);
      if (!tr.hidden) { count += 1; }
    });
    var note = document.getElementById('changes-note');
    if (note) {
      note.textContent = count + ' of ' + data.changes.length + ' change points shown (one is shown while the ' +
        'runs on both sides of it are).';
      note.parentNode.querySelector('table').hidden = count === 0;
    }
    document.querySelectorAll('.n-changes').forEach(function (s) {
      s.textContent = count === data.changes.length ? String(count) : count + ' of ' + data.changes.length;
    });
    return count;
  }

  function showSections() {
    var scenario = scenarioSelect.value;
    document.querySelectorAll('section.scenario').forEach(function (section) {
      var charts = section.querySelectorAll('figure.chart:not([hidden])').length;
      var singles = section.querySelectorAll('table.singles tr[data-run]:not([hidden])').length;
      var table = section.querySelector('table.singles');
      if (table) {
        table.hidden = singles === 0;
        table.previousElementSibling.hidden = singles === 0;
      }
      section.hidden = (scenario !== '' && section.dataset.scenario !== scenario) || charts + singles === 0;
      var item = document.querySelector('#contents li[data-scenario="' + CSS.escape(section.dataset.scenario) + '"]');
      if (item) { item.classList.toggle('empty', section.hidden); }
    });
  }

  function apply() {
    var shown = shownRuns();
    var count = shown.filter(Boolean).length;
    var points = charts.reduce(function (sum, chart) { return sum + redraw(chart, shown); }, 0);
    showRows('table.singles tr[data-run]', shown);
    showRows('table.runs tr[data-run]', shown);
    var changes = showChanges(shown);
    showSections();
    document.getElementById('shown').textContent = count + ' of ' + runs.length + ' runs shown';
    document.body.dataset.runsShown = String(count);
    document.body.dataset.pointsDrawn = String(points);
    document.body.dataset.changesShown = String(changes);
  }

  var form = document.getElementById('filters');
  form.addEventListener('change', apply);
  form.addEventListener('input', apply);
  form.addEventListener('reset', function () { window.setTimeout(apply, 0); });
  apply();
})();
