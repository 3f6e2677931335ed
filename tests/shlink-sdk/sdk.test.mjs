// Shlink's own JavaScript SDK, unmodified, against Slingshot's Shlink API:
// every method it has, in the order a person would use them. Run by
// tests/test_shlink_sdk.py against a real stack (gunicorn, the edge,
// PostgreSQL, Redis and the click importer), which sets:
//   SHLINK_URL       the dashboard, where the API is (/rest/v3)
//   SHLINK_KEY       a write key of a staff member's (who may add domains)
//   SHLINK_READ_KEY  a read-only key of the same person's
//   SHLINK_OTHER_KEY a write key of someone else's, in another team
//   EDGE_URL         the edge, which serves the short URLs
import assert from 'node:assert/strict';
import http from 'node:http';
import { test } from 'node:test';

import { ShlinkApiClient } from '@shlinkio/shlink-js-sdk';
import { ErrorType } from '@shlinkio/shlink-js-sdk/api-contract';
import { FetchHttpClient } from '@shlinkio/shlink-js-sdk/fetch';

const { SHLINK_URL, SHLINK_KEY, SHLINK_READ_KEY, SHLINK_OTHER_KEY, EDGE_URL } = process.env;
const edge = new URL(EDGE_URL);
const run = Date.now().toString(36);
const domain = `sdk-${run}.example`;
// How Shlink names the domain: the authority of its short URLs, the edge's port and all.
const authority = `${domain}:${edge.port}`;
const BROWSER = 'Mozilla/5.0 (X11; Linux x86_64; rv:128.0) Gecko/20100101 Firefox/128.0';

// The test's hosts file: the SDK asks a short domain's health at
// http://<its authority>/rest/v3/health, and the tests visit it; this sends
// those to the edge, with the domain in Host, as a resolver would.
// Everything else is plain fetch.
const resolvingFetch = (url, init = {}) => {
  const target = new URL(url);
  if (target.hostname !== domain) {
    return fetch(url, init);
  }
  return new Promise((resolve, reject) => {
    const request = http.request({
      host: edge.hostname,
      port: edge.port,
      path: target.pathname + target.search,
      method: init.method ?? 'GET',
      headers: { ...init.headers, host: target.host },
    }, (response) => {
      const chunks = [];
      response.on('data', (chunk) => chunks.push(chunk));
      response.on('end', () => resolve(new Response(Buffer.concat(chunks), {
        status: response.statusCode,
        headers: response.headers,
      })));
    });
    request.on('error', reject);
    request.end(init.body);
  });
};

const client = (apiKey) => new ShlinkApiClient(new FetchHttpClient(resolvingFetch), { baseUrl: SHLINK_URL, apiKey });
const shlink = client(SHLINK_KEY);

const refusal = (type, status) => (error) => {
  assert.equal(error.type, type, JSON.stringify(error));
  assert.equal(error.status, status);
  assert.equal(typeof error.title, 'string');
  assert.equal(typeof error.detail, 'string');
  return true;
};

const visit = (path, userAgent = BROWSER) => fetch(new URL(path, EDGE_URL), {
  redirect: 'manual',
  headers: { 'User-Agent': userAgent, Referer: 'https://mail.example/inbox' },
});

async function eventually(what, read, done, seconds = 15) {
  const deadline = Date.now() + seconds * 1000;
  for (;;) {
    const value = await read();
    if (done(value)) {
      return value;
    }
    assert.ok(Date.now() < deadline, `timed out waiting for ${what}: ${JSON.stringify(value)}`);
    await new Promise((resolve) => setTimeout(resolve, 200));
  }
}

const slug = (name) => `${name}-${run}`;
const SHORT_URL_KEYS = [
  'crawlable', 'dateCreated', 'domain', 'forwardQuery', 'hasRedirectRules', 'longUrl', 'meta', 'shortCode',
  'shortUrl', 'tags', 'title', 'visitsSummary',
];

test('health: a version the web client takes for 5.1 (date and browser conditions)', async () => {
  const health = await shlink.health();
  assert.equal(health.status, 'pass');
  assert.match(health.version, /^(\d+)\.(\d+)\.(\d+)$/);
  const [major, minor] = health.version.split('.').map(Number);
  assert.ok(major > 5 || (major === 5 && minor >= 1), health.version);
});

test('createShortUrl with every option', async () => {
  const created = await shlink.createShortUrl({
    longUrl: 'https://example.com/spring?ref=sdk',
    customSlug: slug('spring'),
    tags: [`sale-${run}`, `news-${run}`],
    validSince: '2020-01-01T00:00:00+00:00',
    validUntil: '2099-12-31T23:59:59+00:00',
    maxVisits: 100,
    title: 'Spring sale',
    crawlable: true,
    forwardQuery: false, // dropped by the SDK, as every false value of a new short URL
  });
  assert.deepEqual(Object.keys(created).sort(), SHORT_URL_KEYS);
  assert.equal(created.shortCode, slug('spring'));
  assert.equal(created.shortUrl, `${EDGE_URL}/${slug('spring')}`);
  assert.equal(created.longUrl, 'https://example.com/spring?ref=sdk');
  assert.deepEqual(created.tags, [`sale-${run}`, `news-${run}`]);
  assert.deepEqual(created.meta, {
    validSince: '2020-01-01T00:00:00+00:00', validUntil: '2099-12-31T23:59:59+00:00', maxVisits: 100,
  });
  assert.deepEqual(created.visitsSummary, { total: 0, nonBots: 0, bots: 0 });
  assert.equal(created.domain, null);
  assert.equal(created.title, 'Spring sale');
  assert.equal(created.crawlable, true);
  assert.equal(created.forwardQuery, true);
  assert.equal(created.hasRedirectRules, false);
  assert.match(created.dateCreated, /^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\+00:00$/);
});

test("createShortUrl with Shlink's defaults for what the SDK leaves out", async () => {
  // The SDK drops false values: crawlable false and forwardQuery false never reach the server.
  const created = await shlink.createShortUrl({ longUrl: 'https://example.com/plain', crawlable: false, forwardQuery: false });
  assert.equal(created.forwardQuery, true);
  assert.equal(created.crawlable, false);
  assert.equal(created.title, null);
  assert.deepEqual(created.tags, []);
  assert.deepEqual(created.meta, { validSince: null, validUntil: null, maxVisits: null });
});

test('createShortUrl with shortCodeLength, findIfExists, and a slug taken', async () => {
  const sized = await shlink.createShortUrl({ longUrl: `https://example.com/sized/${run}`, shortCodeLength: 11 });
  assert.equal(sized.shortCode.length, 11);
  const found = await shlink.createShortUrl({ longUrl: `https://example.com/sized/${run}`, findIfExists: true });
  assert.equal(found.shortCode, sized.shortCode);
  await assert.rejects(
    shlink.createShortUrl({ longUrl: 'https://example.com/other', customSlug: slug('spring') }),
    (error) => refusal(ErrorType.INVALID_SLUG, 400)(error) && error.customSlug === slug('spring'),
  );
  await assert.rejects(shlink.createShortUrl({ longUrl: 'ftp://example.com/' }), (error) => (
    refusal(ErrorType.INVALID_ARGUMENT, 400)(error) && error.invalidElements.includes('longUrl')
  ));
});

test('createShortUrl on a domain not served yet adds it', async () => {
  const created = await shlink.createShortUrl({ longUrl: 'https://example.com/elsewhere', domain, customSlug: slug('away') });
  assert.equal(created.domain, authority);
  assert.equal(created.shortUrl, `${edge.protocol}//${authority}/${slug('away')}`);
  const { data } = await shlink.listDomains();
  assert.ok(data.some((entry) => entry.domain === authority && entry.isDefault === false));
  const health = await shlink.health({ domain: authority });
  assert.equal(health.status, 'pass');
});

test('getShortUrl and updateShortUrl, partially', async () => {
  const id = { shortCode: slug('spring') };
  const before = await shlink.getShortUrl(id);
  const after = await shlink.updateShortUrl(id, { title: 'Spring sale, extended', maxVisits: null, forwardQuery: false });
  assert.equal(after.title, 'Spring sale, extended');
  assert.equal(after.meta.maxVisits, null);
  assert.deepEqual(after.tags, before.tags);
  assert.equal(after.longUrl, before.longUrl);
  assert.equal(after.forwardQuery, false);
  assert.deepEqual(await shlink.getShortUrl(id), after);
  const away = await shlink.getShortUrl({ shortCode: slug('away'), domain });
  assert.equal(away.domain, authority);
  assert.deepEqual(await shlink.getShortUrl({ shortCode: slug('away'), domain: away.domain }), away);
  await assert.rejects(shlink.getShortUrl({ shortCode: slug('away') }), refusal(ErrorType.INVALID_SHORTCODE, 404));
});

test('listShortUrls: pages, search, tags, order, dates, domains', async () => {
  const mine = (list) => list.data.map((item) => item.shortCode).filter((code) => code.endsWith(run));
  const all = await shlink.listShortUrls({ itemsPerPage: 50 });
  assert.deepEqual(Object.keys(all.pagination).sort(), ['currentPage', 'itemsInCurrentPage', 'itemsPerPage', 'pagesCount', 'totalItems']);
  assert.equal(all.pagination.totalItems, 4);
  const second = await shlink.listShortUrls({ page: '2', itemsPerPage: 2 });
  assert.deepEqual(second.pagination, { currentPage: 2, pagesCount: 2, itemsPerPage: 2, itemsInCurrentPage: 2, totalItems: 4 });
  assert.deepEqual(mine(await shlink.listShortUrls({ searchTerm: 'spring' })), [slug('spring')]);
  assert.deepEqual(mine(await shlink.listShortUrls({ tags: [`sale-${run}`, `none-${run}`] })), [slug('spring')]);
  assert.deepEqual(mine(await shlink.listShortUrls({ tags: [`sale-${run}`, `none-${run}`], tagsMode: 'all' })), []);
  assert.ok(!mine(await shlink.listShortUrls({ excludeTags: [`sale-${run}`] })).includes(slug('spring')));
  const ordered = await shlink.listShortUrls({ orderBy: { field: 'shortCode', dir: 'ASC' }, itemsPerPage: 50 });
  const codes = ordered.data.map((item) => item.shortCode);
  assert.deepEqual(codes, [...codes].sort());
  assert.equal((await shlink.listShortUrls({ startDate: '2099-01-01T00:00:00+00:00' })).data.length, 0);
  assert.equal((await shlink.listShortUrls({ endDate: '2000-01-01T00:00:00+00:00' })).data.length, 0);
  assert.deepEqual(mine(await shlink.listShortUrls({ domain })), [slug('away')]);
  assert.deepEqual(mine(await shlink.listShortUrls({ domain: authority })), [slug('away')]);
  assert.ok(!mine(await shlink.listShortUrls({ domain: 'DEFAULT', itemsPerPage: 50 })).includes(slug('away')));
  assert.equal((await shlink.listShortUrls({ excludePastValidUntil: true, itemsPerPage: 50 })).data.length, 4);
});

test('visits of a short URL, of a tag, of a domain, non-orphan, orphan, and the overview', async () => {
  const id = { shortCode: slug('spring') };
  assert.equal((await visit(`/${slug('spring')}`)).status, 302);
  assert.equal((await visit(`/${slug('spring')}/track`)).status, 200);
  assert.equal((await visit(`/${slug('spring')}`, 'curl/8.5.0')).status, 302);
  assert.equal((await visit(`/nothing-${run}`)).status, 404);
  const visits = await eventually('three visits imported', () => shlink.getShortUrlVisits(id), (list) => list.data.length === 3);
  assert.deepEqual(visits.pagination, { currentPage: 1, pagesCount: 1, itemsPerPage: 5000, itemsInCurrentPage: 3, totalItems: 3 });
  for (const item of visits.data) {
    assert.equal(item.referer, 'https://mail.example/inbox');
    assert.equal(item.visitedUrl, `${EDGE_URL}/${slug('spring')}`);
    assert.match(item.date, /^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\+00:00$/);
    assert.ok('visitLocation' in item);
  }
  assert.deepEqual(visits.data.map((item) => item.potentialBot).sort(), [false, false, true]);
  assert.equal((await shlink.getShortUrlVisits(id, { excludeBots: true })).data.length, 2);
  assert.equal((await shlink.getShortUrlVisits(id, { page: 2, itemsPerPage: 2 })).data.length, 1);
  assert.equal((await shlink.getShortUrlVisits(id, { startDate: '2099-01-01T00:00:00+00:00' })).data.length, 0);
  assert.equal((await shlink.getShortUrl(id)).visitsSummary.total, 3);
  assert.deepEqual((await shlink.getShortUrl(id)).visitsSummary, { total: 3, nonBots: 2, bots: 1 });

  assert.equal((await shlink.getTagVisits(`sale-${run}`)).pagination.totalItems, 3);
  assert.equal((await shlink.getTagVisits(`sale-${run}`, { domain })).pagination.totalItems, 0);
  await assert.rejects(shlink.getTagVisits(`none-${run}`), refusal(ErrorType.TAG_NOT_FOUND, 404));
  assert.equal((await shlink.getDomainVisits('DEFAULT')).pagination.totalItems, 3);
  assert.equal((await shlink.getDomainVisits(domain)).pagination.totalItems, 0);
  assert.equal((await shlink.getDomainVisits(authority)).pagination.totalItems, 0);
  assert.equal((await shlink.getNonOrphanVisits({ domain: 'DEFAULT' })).pagination.totalItems, 3);

  const orphans = await eventually('the orphan visit', () => shlink.getOrphanVisits(), (list) => (
    list.data.some((item) => item.visitedUrl === `${EDGE_URL}/nothing-${run}`)
  ));
  const orphan = orphans.data.find((item) => item.visitedUrl === `${EDGE_URL}/nothing-${run}`);
  assert.equal(orphan.type, 'invalid_short_url');
  assert.equal((await shlink.getOrphanVisits({ type: 'base_url' })).data.length, 0);
  assert.ok((await shlink.getOrphanVisits({ domain: 'DEFAULT', type: 'invalid_short_url' })).data.length >= 1);

  const overview = await shlink.getVisitsOverview();
  assert.deepEqual(overview.nonOrphanVisits, { total: 3, nonBots: 2, bots: 1 });
  assert.ok(overview.orphanVisits.total >= 1);
});

test('deleteShortUrlVisits and deleteOrphanVisits', async () => {
  const id = { shortCode: slug('spring') };
  assert.deepEqual(await shlink.deleteShortUrlVisits(id), { deletedVisits: 3 });
  assert.equal((await shlink.getShortUrlVisits(id)).data.length, 0);
  assert.deepEqual((await shlink.getShortUrl(id)).visitsSummary, { total: 0, nonBots: 0, bots: 0 });
  const { deletedVisits } = await shlink.deleteOrphanVisits();
  assert.ok(deletedVisits >= 1);
  assert.equal((await shlink.getVisitsOverview()).orphanVisits.total, 0);
});

test('listTags, tagsStats, editTag, deleteTags', async () => {
  const { data } = await shlink.listTags();
  assert.ok(data.includes(`sale-${run}`) && data.includes(`news-${run}`));
  const stats = await shlink.tagsStats();
  const sale = stats.data.find((item) => item.tag === `sale-${run}`);
  assert.deepEqual(sale, { tag: `sale-${run}`, shortUrlsCount: 1, visitsSummary: { total: 0, nonBots: 0, bots: 0 } });
  assert.deepEqual(
    await shlink.editTag({ oldName: `sale-${run}`, newName: `offer-${run}` }),
    { oldName: `sale-${run}`, newName: `offer-${run}` },
  );
  assert.deepEqual((await shlink.getShortUrl({ shortCode: slug('spring') })).tags, [`offer-${run}`, `news-${run}`]);
  await assert.rejects(
    shlink.editTag({ oldName: `offer-${run}`, newName: `news-${run}` }),
    refusal(ErrorType.TAG_CONFLICT, 409),
  );
  await assert.rejects(shlink.editTag({ oldName: `none-${run}`, newName: 'x' }), refusal(ErrorType.TAG_NOT_FOUND, 404));
  await shlink.deleteTags([`news-${run}`]);
  assert.deepEqual((await shlink.getShortUrl({ shortCode: slug('spring') })).tags, [`offer-${run}`]);
});

test('listDomains and editDomainRedirects', async () => {
  const redirects = await shlink.editDomainRedirects({
    domain: authority, baseUrlRedirect: 'https://example.com/home', invalidShortUrlRedirect: 'https://example.com/missing',
  });
  assert.deepEqual(redirects, {
    baseUrlRedirect: 'https://example.com/home',
    regular404Redirect: 'https://example.com/missing',
    invalidShortUrlRedirect: 'https://example.com/missing',
  });
  const { data, defaultRedirects } = await shlink.listDomains();
  assert.deepEqual(data.find((entry) => entry.domain === authority).redirects, redirects);
  assert.equal(data.filter((entry) => entry.isDefault).length, 1);
  // Each domain as the web client checks it: the authority its short URLs
  // have, which answers <scheme>://<domain>/rest/v3/health.
  const [byDefault] = data.filter((entry) => entry.isDefault);
  const { shortUrl } = await shlink.getShortUrl({ shortCode: slug('spring') });
  assert.equal(byDefault.domain, new URL(shortUrl).host);
  assert.equal(byDefault.domain, edge.host);
  for (const { domain: named } of [byDefault, data.find((entry) => entry.domain === authority)]) {
    assert.equal((await shlink.health({ domain: named })).status, 'pass', named);
  }
  assert.deepEqual(Object.keys(defaultRedirects).sort(), ['baseUrlRedirect', 'invalidShortUrlRedirect', 'regular404Redirect']);
});

test('getShortUrlRedirectRules and setShortUrlRedirectRules', async () => {
  const id = { shortCode: slug('spring') };
  const set = await shlink.setShortUrlRedirectRules(id, {
    redirectRules: [
      { longUrl: 'https://example.com/ios', conditions: [{ type: 'device', matchKey: null, matchValue: 'ios' }] },
      {
        longUrl: 'https://example.com/de',
        conditions: [
          { type: 'language', matchKey: null, matchValue: 'de' },
          { type: 'query-param', matchKey: 'ref', matchValue: 'mail' },
          { type: 'any-value-query-param', matchKey: 'promo', matchValue: null },
          { type: 'geolocation-country-code', matchKey: null, matchValue: 'DE' },
        ],
      },
    ],
  });
  assert.equal(set.defaultLongUrl, 'https://example.com/spring?ref=sdk');
  assert.deepEqual(set.redirectRules.map((rule) => rule.priority), [1, 2]);
  assert.deepEqual(await shlink.getShortUrlRedirectRules(id), set);
  assert.equal((await shlink.getShortUrl(id)).hasRedirectRules, true);
  await eventually('the edge to serve the rule', () => visit(`/${slug('spring')}`, 'Mozilla/5.0 (iPhone; CPU iPhone OS 17_0 like Mac OS X)'), (response) => (
    response.headers.get('location') === 'https://example.com/ios'
  ));
  await assert.rejects(
    shlink.setShortUrlRedirectRules(id, {
      redirectRules: [{ longUrl: 'https://example.com/x', conditions: [{ type: 'geolocation-city-name', matchKey: null, matchValue: 'Berlin' }] }],
    }),
    (error) => refusal(ErrorType.INVALID_ARGUMENT, 400)(error) && error.invalidElements.includes('redirectRules'),
  );
  assert.deepEqual(await shlink.getShortUrlRedirectRules(id), set);
});

test("redirect rules by Shlink 5.1's address, browser and date conditions", async () => {
  const { shortCode } = await shlink.createShortUrl({ longUrl: 'https://example.com/plain', customSlug: slug('conditions') });
  const id = { shortCode };
  const conditions = [
    { type: 'ip-address', matchKey: null, matchValue: '127.0.0.0/8' },
    { type: 'browser', matchKey: null, matchValue: 'edge' },
    // As Shlink's web client sends a date: date-fns' formatISO, with the local offset.
    { type: 'after-date', matchKey: null, matchValue: '2020-01-01T01:00:00+01:00' },
    { type: 'before-date', matchKey: null, matchValue: '2999-12-31T23:59:59Z' },
  ];
  const set = await shlink.setShortUrlRedirectRules(id, {
    redirectRules: [
      { longUrl: 'https://example.com/edge', conditions },
      { longUrl: 'https://example.com/office', conditions: [{ type: 'ip-address', matchKey: null, matchValue: '10.*.*.*' }] },
      { longUrl: 'https://example.com/chromebook', conditions: [{ type: 'device', matchKey: null, matchValue: 'chromeos' }] },
    ],
  });
  assert.deepEqual(set.redirectRules[0].conditions, [
    conditions[0],
    conditions[1],
    { type: 'after-date', matchKey: null, matchValue: '2020-01-01T00:00:00+00:00' },
    { type: 'before-date', matchKey: null, matchValue: '2999-12-31T23:59:59+00:00' },
  ]);
  assert.deepEqual(set.redirectRules.map((rule) => rule.conditions[0].matchValue), ['127.0.0.0/8', '10.*.*.*', 'chromeos']);
  assert.deepEqual(await shlink.getShortUrlRedirectRules(id), set);
  const edgeBrowser = 'Mozilla/5.0 (Windows NT 10.0; Win64; x64) AppleWebKit/537.36 (KHTML, like Gecko) '
    + 'Chrome/131.0.0.0 Safari/537.36 Edg/131.0.2903.86';
  const chromebook = 'Mozilla/5.0 (X11; CrOS x86_64 14541.0.0) AppleWebKit/537.36 (KHTML, like Gecko) '
    + 'Chrome/131.0.0.0 Safari/537.36';
  await eventually('the edge to serve the rules', () => visit(`/${shortCode}`, edgeBrowser), (response) => (
    response.headers.get('location') === 'https://example.com/edge'
  ));
  assert.equal((await visit(`/${shortCode}`, chromebook)).headers.get('location'), 'https://example.com/chromebook');
  assert.equal((await visit(`/${shortCode}`)).headers.get('location'), 'https://example.com/plain');
  for (const [type, matchValue] of [['ip-address', '10.0.0.0/33'], ['browser', 'netscape'], ['before-date', 'soon']]) {
    await assert.rejects(
      shlink.setShortUrlRedirectRules(id, { redirectRules: [{ longUrl: 'https://example.com/x', conditions: [{ type, matchKey: null, matchValue }] }] }),
      (error) => refusal(ErrorType.INVALID_ARGUMENT, 400)(error) && error.invalidElements.includes('redirectRules'),
    );
  }
  assert.deepEqual(await shlink.getShortUrlRedirectRules(id), set);
});

test('mercureInfo: not configured', async () => {
  await assert.rejects(shlink.mercureInfo(), refusal(ErrorType.MERCURE_NOT_CONFIGURED, 501));
});

test("keys: a read key reads only, another team's key sees nothing of this one's, a wrong key nothing", async () => {
  const reader = client(SHLINK_READ_KEY);
  assert.equal((await reader.getShortUrl({ shortCode: slug('spring') })).shortCode, slug('spring'));
  await assert.rejects(reader.createShortUrl({ longUrl: 'https://example.com/no' }), (error) => error.status === 403);
  await assert.rejects(reader.deleteTags([`offer-${run}`]), refusal('https://shlink.io/api/error/forbidden-tag-operation', 403));
  const other = client(SHLINK_OTHER_KEY);
  await assert.rejects(other.getShortUrl({ shortCode: slug('spring') }), refusal(ErrorType.INVALID_SHORTCODE, 404));
  assert.equal((await other.listShortUrls()).pagination.totalItems, 0);
  await assert.rejects(other.deleteShortUrl({ shortCode: slug('spring') }), refusal(ErrorType.INVALID_SHORTCODE, 404));
  await assert.rejects(other.deleteOrphanVisits(), (error) => error.status === 403);
  await assert.rejects(other.createShortUrl({ longUrl: 'https://example.com/x', domain: `new-${run}.example` }), (error) => (
    refusal(ErrorType.INVALID_ARGUMENT, 400)(error) && error.invalidElements.includes('domain')
  ));
  await assert.rejects(client('ssk_not-a-key').listTags(), refusal(ErrorType.INVALID_API_KEY, 401));
  await assert.rejects(client('').listTags(), refusal(ErrorType.INVALID_AUTHORIZATION, 401));
});

test('deleteShortUrl', async () => {
  const onDomain = () => resolvingFetch(`http://${domain}/${slug('away')}`).then((response) => response.headers.get('location'));
  await eventually('the edge to serve the domain', onDomain, (location) => location === 'https://example.com/elsewhere');
  await shlink.deleteShortUrl({ shortCode: slug('away'), domain });
  await assert.rejects(shlink.getShortUrl({ shortCode: slug('away'), domain }), refusal(ErrorType.INVALID_SHORTCODE, 404));
  // Now a short URL the domain does not have: its invalidShortUrlRedirect.
  await eventually('the edge to forget the short URL', onDomain, (location) => location === 'https://example.com/missing');
});
