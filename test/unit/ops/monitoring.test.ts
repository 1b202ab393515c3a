/**
 * The monitoring that ships with the service (deploy/): the Prometheus alert rules and the
 * Grafana dashboard. Each parses; each metric they name is one the service exports (checked
 * against a Metrics registry with every gauge of an API and a worker process registered); the
 * alerts cover fan-out lag, the breaker, replica lag and the error rate; the dashboard shows
 * every figure an operator needs. `promtool check rules` and `check config` run as well where
 * promtool is installed (.ci/run installs Debian's prometheus package for it).
 */
import { spawnSync } from 'node:child_process';
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { parse } from 'yaml';
import { Metrics } from '../../../src/kernel/observability';

const DEPLOY = join(__dirname, '..', '..', '..', 'deploy');
const ALERTS = join(DEPLOY, 'prometheus', 'alerts.yml');
const PROMETHEUS = join(DEPLOY, 'prometheus', 'prometheus.yml');
const DASHBOARD = join(DEPLOY, 'grafana', 'follow-feed.json');

interface Rule {
  alert: string;
  expr: string;
  for?: string;
  labels?: Record<string, string>;
  annotations?: Record<string, string>;
}

/** Every series name the service's processes export (histograms by their _bucket, _sum and _count). */
async function exportedNames(): Promise<Set<string>> {
  const metrics = new Metrics(async () => ({ wait: 0, prioritized: 0 }));
  metrics.watchBreaker(() => 'closed');
  metrics.watchRebuilds(() => 0);
  metrics.watchSubscriptions(() => ({ sockets: 0, subscriptions: 0 }));
  metrics.watchReplicas({ replicaStatuses: () => [], reads: { primary: 0, replica: 0 } });
  const names = new Set<string>();
  for (const metric of await metrics.registry.getMetricsAsJSON()) {
    names.add(metric.name);
    if (String(metric.type) === 'histogram')
      for (const suffix of ['_bucket', '_sum', '_count']) names.add(`${metric.name}${suffix}`);
  }
  return names;
}

/** The service's metric names in a PromQL expression (its own prefixes; `up` and functions are Prometheus's). */
function metricNamesIn(expr: string): string[] {
  return [...expr.matchAll(/\b(?:graphql|fanout|feed|redis|mysql)_[a-z0-9_]+\b/g)].map((match) => match[0]);
}

function rules(): Rule[] {
  const document = parse(readFileSync(ALERTS, 'utf8')) as { groups: Array<{ name: string; rules: Rule[] }> };
  return document.groups.flatMap((group) => group.rules);
}

function dashboardExpressions(): Array<{ panel: string; expr: string }> {
  const dashboard = JSON.parse(readFileSync(DASHBOARD, 'utf8')) as {
    panels: Array<{ title: string; type: string; targets?: Array<{ expr: string }> }>;
  };
  return dashboard.panels
    .filter((panel) => panel.type !== 'row')
    .flatMap((panel) => (panel.targets ?? []).map((target) => ({ panel: panel.title, expr: target.expr })));
}

describe('alert rules', () => {
  it('are complete rules, for fan-out lag, the breaker, replica lag and the error rate, on metrics the service exports', async () => {
    const all = rules();
    for (const rule of all) {
      expect(rule).toMatchObject({
        alert: expect.any(String),
        expr: expect.any(String),
        for: expect.stringMatching(/^\d+[smh]$/),
      });
      expect(['warning', 'critical']).toContain(rule.labels?.severity);
      expect(rule.annotations?.summary).toEqual(expect.any(String));
    }
    const exprOf = (name: string) => all.find((rule) => rule.alert === name)?.expr ?? '';
    expect(exprOf('FanoutLagHigh')).toContain('fanout_lag_seconds_bucket');
    expect(exprOf('RedisBreakerOpen')).toContain('redis_breaker_state');
    expect(exprOf('ReplicaLagHigh')).toContain('mysql_replica_lag_seconds');
    expect(exprOf('ErrorRateHigh')).toContain('graphql_errors_total');
    const exported = await exportedNames();
    const unknown = all.flatMap((rule) =>
      metricNamesIn(rule.expr)
        .filter((name) => !exported.has(name))
        .map((name) => `${rule.alert}: ${name}`),
    );
    expect(unknown).toEqual([]);
  });

  it('pass promtool where it is installed', () => {
    const promtool = spawnSync('promtool', ['--version']);
    if (promtool.error) {
      // Not installed on this machine: the parse above is the check.
      expect((promtool.error as NodeJS.ErrnoException).code).toBe('ENOENT');
      return;
    }
    for (const args of [
      ['check', 'rules', ALERTS],
      ['check', 'config', PROMETHEUS],
    ]) {
      const run = spawnSync('promtool', args, { encoding: 'utf8' });
      expect({ args, status: run.status, output: run.stdout + run.stderr }).toMatchObject({ status: 0 });
    }
  });
});

describe('the Grafana dashboard', () => {
  it('shows fan-out lag, queue depth by lane, the breaker, rebuilds, sockets and subscriptions, errors by code and replica lag, from exported metrics', async () => {
    const expressions = dashboardExpressions();
    const shown = expressions.map((target) => target.expr).join('\n');
    for (const name of [
      'fanout_lag_seconds_bucket',
      'fanout_queue_waiting_jobs',
      'redis_breaker_state',
      'feed_inbox_rebuilds_in_flight',
      'graphql_ws_sockets_open',
      'graphql_subscriptions_open',
      'graphql_errors_total',
      'mysql_replica_lag_seconds',
      'feed_inbox_writes_total',
    ]) {
      expect(shown).toContain(name);
    }
    const exported = await exportedNames();
    expect(
      expressions.flatMap(({ panel, expr }) =>
        metricNamesIn(expr)
          .filter((name) => !exported.has(name))
          .map((name) => `${panel}: ${name}`),
      ),
    ).toEqual([]);
  });
});
