package.path = "./?.lua;" .. package.path
local memo = require("slingshot.memo")
local rules = require("slingshot.rules")

local function safe(url)
    return type(url) == "string" and url:find("^https?://") ~= nil
end

local UA = {
    iphone = "Mozilla/5.0 (iPhone; CPU iPhone OS 17_0 like Mac OS X) AppleWebKit/605.1.15 "
        .. "(KHTML, like Gecko) Version/17.0 Mobile/15E148 Safari/604.1",
    ipad = "Mozilla/5.0 (iPad; CPU OS 16_6 like Mac OS X) AppleWebKit/605.1.15 Mobile/15E148",
    android = "Mozilla/5.0 (Linux; Android 14; Pixel 8) AppleWebKit/537.36 (KHTML, like Gecko) "
        .. "Chrome/120.0 Mobile Safari/537.36",
    windows = "Mozilla/5.0 (Windows NT 10.0; Win64; x64) AppleWebKit/537.36 Chrome/120.0",
    macos = "Mozilla/5.0 (Macintosh; Intel Mac OS X 10_15_7) AppleWebKit/605.1.15 Safari/605.1.15",
    linux = "Mozilla/5.0 (X11; Linux x86_64; rv:120.0) Gecko/20100101 Firefox/120.0",
    chromeos = "Mozilla/5.0 (X11; CrOS x86_64 14541.0.0) AppleWebKit/537.36 (KHTML, like Gecko) "
        .. "Chrome/120.0.0.0 Safari/537.36",
    curl = "curl/8.0",
}

-- A request whose every part is given, counting how often pick asks.
local function request(parts)
    local asked = {}
    local function give(name)
        return function()
            asked[name] = (asked[name] or 0) + 1
            return parts[name]
        end
    end
    return {
        user_agent = give("user_agent"),
        accept_language = give("accept_language"),
        args = give("args"),
        country = give("country"),
        visitor = give("visitor"),
        address = give("address"),
        now = give("now"),
    }, asked
end

local function one(conditions)
    return assert(rules.compile({ { url = "https://rule.example/", conditions = conditions } },
        nil, safe))
end

local function picks(compiled, parts)
    local url, label = rules.pick(compiled, (request(parts)))
    return url, label
end

describe("rules.devices", function()
    it("classifies the usual User-Agents", function()
        assert.same({ ios = true, mobile = true }, rules.devices(UA.iphone))
        assert.same({ ios = true, mobile = true }, rules.devices(UA.ipad))
        assert.same({ android = true, mobile = true }, rules.devices(UA.android))
        assert.same({ windows = true, desktop = true }, rules.devices(UA.windows))
        assert.same({ macos = true, desktop = true }, rules.devices(UA.macos))
        assert.same({ linux = true, desktop = true }, rules.devices(UA.linux))
        assert.same({ chromeos = true, desktop = true }, rules.devices(UA.chromeos))
        assert.same({}, rules.devices(UA.curl))
        assert.same({}, rules.devices(nil))
    end)
end)

describe("rules.languages", function()
    it("orders by q-value, leaves out q=0 and *, lower-cases", function()
        assert.same({ "fr-ch", "fr", "en", "de" },
            rules.languages("fr-CH, fr;q=0.9, en;q=0.8, de;q=0.7, *;q=0.5"))
        assert.same({ "de", "en-gb" }, rules.languages("en-GB;q=0.5, it;q=0, de"))
        assert.same({ "da", "en" }, rules.languages("da,en"))
        assert.same({}, rules.languages(nil))
        assert.same({}, rules.languages("it;q=0.0"))
    end)
end)

describe("rules.compile", function()
    it("gives nil for a link without rules or split", function()
        assert.is_nil(rules.compile(nil, nil, safe))
        assert.is_nil(rules.compile({}, {}, safe))
    end)

    it("refuses values that break the contract", function()
        local function with(condition)
            return { { { url = "https://e.com/", conditions = { condition } } } }
        end
        local function split(a, b)
            return { nil, { a, { url = "https://b.com/", weight = b or 1 } } }
        end
        local bad = {
            { { { url = "javascript:x", conditions = {} } } },
            { { { url = "https://e.com/" } } },
            with({ type = "device", value = 7 }),
            with({ type = "browser" }),
            with({ type = "ip", value = "192.0.2.0/33" }),
            with({ type = "ip", value = "10.*.1" }),
            with({ type = "ip", value = "10.0.0.1, 10.0.0.2" }),
            with({ type = "ip", value = "fe80::*" }),
            with({ type = "before", value = "2030-01-01" }),
            with({ type = "after", value = "2030-02-30T00:00:00+01:00" }),
            with({ type = "after", value = "2030-13-01T00:00:00Z" }),
            with({ type = "country", value = "USA" }),
            with({ type = "language", value = "e n" }),
            with({ type = "query" }),
            with({ type = "query", key = string.rep("k", rules.MAX_QUERY_TEXT + 1) }),
            with({ type = "query", key = "ref",
                value = string.rep("v", rules.MAX_QUERY_TEXT + 1) }),
            { nil, { { url = "https://a.com/", weight = 1 } } },
            split({ url = "https://a.com/", weight = 0 }),
            split({ url = "https://a.com/", weight = 1.5 }),
            split({ url = "ftp://a.com/", weight = 1 }),
            split({ url = "https://a.com/", weight = 1 }, 101),
        }
        local many = {}
        for i = 1, rules.MAX_RULES + 1 do
            many[i] = { url = "https://e.com/", conditions = {} }
        end
        bad[#bad + 1] = { many }
        for i, case in ipairs(bad) do
            local compiled, err = rules.compile(case[1], case[2], safe)
            assert.is_nil(compiled, i)
            assert.is_string(err, i)
        end
    end)

    it("makes a rule with a condition type it does not know never match", function()
        local compiled = assert(rules.compile({
            { url = "https://new.example/", conditions = { { type = "weekday", value = "mon" } } },
            { url = "https://old.example/", conditions = {} },
        }, nil, safe))
        assert.same({ "https://old.example/", "2" }, { picks(compiled, {}) })
    end)

    it("makes a device or browser it does not know never match, not the link unserved", function()
        local compiled = assert(rules.compile({
            { url = "https://tv.example/", conditions = { { type = "device", value = "tv" } } },
            { url = "https://lynx.example/",
                conditions = { { type = "browser", value = "lynx" } } },
            { url = "https://old.example/", conditions = {} },
        }, nil, safe))
        assert.same({ "https://old.example/", "3" }, { picks(compiled, { user_agent = "Lynx" }) })
    end)
end)

describe("rules.moment", function()
    it("reads the dashboard's UTC moments as seconds since 1970", function()
        assert.equal(0, rules.moment("1970-01-01T00:00:00Z"))
        assert.equal(951782400, rules.moment("2000-02-29T00:00:00Z"))
        assert.equal(1893455999, rules.moment("2029-12-31T23:59:59Z"))
        assert.equal(253402300799, rules.moment("9999-12-31T23:59:59Z"))
        assert.is_nil(rules.moment("2030-01-01T00:00:00+00:00"))
        assert.is_nil(rules.moment("2030-01-01 00:00:00Z"))
        assert.is_nil(rules.moment("2030-01-01T24:00:00Z"))
    end)
end)

describe("rules.pick", function()
    it("matches each device value", function()
        for _, value in ipairs({ "ios", "android", "mobile", "desktop", "windows", "macos",
                "linux", "chromeos" }) do
            local compiled = one({ { type = "device", value = value } })
            for name, ua in pairs(UA) do
                local want = rules.devices(ua)[value] == true
                local url = picks(compiled, { user_agent = ua })
                assert.equal(want, url ~= nil, value .. " for " .. name)
            end
        end
        assert.equal("https://rule.example/",
            (picks(one({ { type = "device", value = "MOBILE" } }), { user_agent = UA.android })))
    end)

    it("matches a language against the visitor's languages, en covering en-GB", function()
        local en = one({ { type = "language", value = "en" } })
        local en_gb = one({ { type = "language", value = "en-GB" } })
        assert.is_not_nil((picks(en, { accept_language = "en-GB,fr;q=0.5" })))
        assert.is_not_nil((picks(en, { accept_language = "fr, EN;q=0.3" })))
        assert.is_nil((picks(en, { accept_language = "fr, en;q=0" })))
        assert.is_nil((picks(en, { accept_language = "eng, fr" })))
        assert.is_nil((picks(en, {})))
        assert.is_not_nil((picks(en_gb, { accept_language = "en-gb" })))
        assert.is_nil((picks(en_gb, { accept_language = "en, en-US" })))
    end)

    it("matches a country code, whatever its case", function()
        local compiled = one({ { type = "country", value = "de" } })
        assert.is_not_nil((picks(compiled, { country = "DE" })))
        assert.is_nil((picks(compiled, { country = "FR" })))
        assert.is_nil((picks(compiled, { country = "" })))
        assert.is_nil((picks(compiled, {})))
    end)

    it("matches a query key with a value, or present", function()
        local equals = one({ { type = "query", key = "ref", value = "mail" } })
        local present = one({ { type = "query", key = "ref" } })
        assert.is_not_nil((picks(equals, { args = { ref = "mail" } })))
        assert.is_not_nil((picks(equals, { args = { ref = { "web", "mail" } } })))
        assert.is_nil((picks(equals, { args = { ref = "web" } })))
        assert.is_nil((picks(equals, { args = { ref = true } })))
        assert.is_not_nil((picks(present, { args = { ref = true } })))
        assert.is_not_nil((picks(present, { args = { ref = "" } })))
        assert.is_nil((picks(present, { args = { other = "1" } })))
        assert.is_nil((picks(present, {})))
    end)

    it("matches the visitor's address: one, a CIDR range, IPv6, Shlink's wildcards", function()
        local function matches(pattern, address)
            return picks(one({ { type = "ip", value = pattern } }), { address = address }) ~= nil
        end
        assert.is_true(matches("192.0.2.7", "192.0.2.7"))
        assert.is_false(matches("192.0.2.7", "192.0.2.70"))
        assert.is_true(matches("192.0.2.0/24", "192.0.2.255"))
        assert.is_false(matches("192.0.2.0/24", "192.0.3.0"))
        assert.is_true(matches("10.0.0.0/8", "10.255.1.2"))
        assert.is_true(matches("0.0.0.0/0", "203.0.113.9"))
        assert.is_true(matches("192.0.2.128/25", "192.0.2.200"))
        assert.is_false(matches("192.0.2.128/25", "192.0.2.127"))
        assert.is_true(matches("192.168.1.*", "192.168.1.42"))
        assert.is_false(matches("192.168.1.*", "192.168.2.42"))
        assert.is_true(matches("10.*.*.*", "10.1.2.3"))
        assert.is_true(matches("10.*.0.1", "10.77.0.1"))
        assert.is_false(matches("10.*.0.1", "10.77.0.2"))
        assert.is_true(matches("2001:db8::/32", "2001:db8:ffff::1"))
        assert.is_false(matches("2001:db8::/32", "2001:db9::1"))
        assert.is_true(matches("2001:db8::1", "2001:DB8:0:0:0:0:0:1"))
        assert.is_true(matches("::1", "::1"))
        assert.is_true(matches("192.0.2.0/24", "::ffff:192.0.2.9"))  -- IPv4-mapped
        assert.is_false(matches("0.0.0.0/0", "::1"))
        assert.is_false(matches("::/0", "192.0.2.1"))
        assert.is_false(matches("0.0.0.0/0", nil))
        assert.is_false(matches("0.0.0.0/0", "unix:"))
        assert.is_false(matches("0.0.0.0/0", "1.2.3.256"))
    end)

    it("matches each browser Shlink names, from real User-Agents", function()
        local compiled = assert(rules.compile({
            { url = "https://chrome/", conditions = { { type = "browser", value = "chrome" } } },
            { url = "https://firefox/", conditions = { { type = "browser", value = "firefox" } } },
            { url = "https://edge/", conditions = { { type = "browser", value = "edge" } } },
            { url = "https://safari/", conditions = { { type = "browser", value = "Safari" } } },
            { url = "https://opera/", conditions = { { type = "browser", value = "opera" } } },
            { url = "https://android/",
                conditions = { { type = "browser", value = "android_browser" } } },
        }, nil, function() return true end))
        assert.equal("https://chrome/", (picks(compiled, { user_agent = UA.android })))
        assert.equal("https://firefox/", (picks(compiled, { user_agent = UA.linux })))
        assert.equal("https://safari/", (picks(compiled, { user_agent = UA.iphone })))
        assert.is_nil((picks(compiled, { user_agent = UA.curl })))
        assert.is_nil((picks(compiled, {})))
        local req, asked = request({ user_agent = UA.macos })
        assert.equal("https://safari/", (rules.pick(compiled, req)))
        assert.same({ user_agent = 1 }, asked)
    end)

    it("matches a date window to the second, as Shlink: before and after are strict", function()
        local at = rules.moment("2030-01-01T00:00:00Z")
        local before = one({ { type = "before", value = "2030-01-01T00:00:00Z" } })
        local after = one({ { type = "after", value = "2030-01-01T00:00:00Z" } })
        local window = one({ { type = "after", value = "2030-01-01T00:00:00Z" },
            { type = "before", value = "2030-01-02T00:00:00Z" } })
        assert.is_not_nil((picks(before, { now = at - 0.001 })))
        assert.is_nil((picks(before, { now = at })))
        assert.is_nil((picks(after, { now = at })))
        assert.is_not_nil((picks(after, { now = at + 0.001 })))
        assert.is_not_nil((picks(window, { now = at + 3600 })))
        assert.is_nil((picks(window, { now = at + 86400 })))
        local req, asked = request({ now = at + 1 })
        assert.is_not_nil((rules.pick(window, req)))
        assert.same({ now = 1 }, asked)
    end)

    it("takes the first rule whose conditions all hold, else nil", function()
        local compiled = assert(rules.compile({
            { url = "https://a.example/", conditions = {
                { type = "device", value = "ios" }, { type = "language", value = "de" } } },
            { url = "https://b.example/", conditions = { { type = "device", value = "mobile" } } },
            { url = "https://c.example/", conditions = { { type = "language", value = "de" } } },
        }, nil, safe))
        assert.same({ "https://a.example/", "1" },
            { picks(compiled, { user_agent = UA.iphone, accept_language = "de" }) })
        assert.same({ "https://b.example/", "2" },
            { picks(compiled, { user_agent = UA.iphone, accept_language = "fr" }) })
        assert.same({ "https://c.example/", "3" },
            { picks(compiled, { user_agent = UA.linux, accept_language = "de-AT" }) })
        assert.same({}, { picks(compiled, { user_agent = UA.linux, accept_language = "fr" }) })
    end)

    it("asks the request only for what a condition needs, once", function()
        local compiled = assert(rules.compile({
            { url = "https://a.example/", conditions = { { type = "device", value = "ios" } } },
            { url = "https://b.example/", conditions = { { type = "device", value = "android" } } },
        }, nil, safe))
        local req, asked = request({ user_agent = UA.linux })
        assert.is_nil(rules.pick(compiled, req))
        assert.same({ user_agent = 1 }, asked)
    end)

    it("answers a header it has seen as the first time, past a full memo too", function()
        local compiled = assert(rules.compile({
            { url = "https://a.example/", conditions = { { type = "language", value = "de" } } },
            { url = "https://b.example/", conditions = { { type = "device", value = "ios" } } },
        }, nil, safe))
        local function answers()
            return {
                picks(compiled, { accept_language = "de-AT, en;q=0.5", user_agent = UA.linux }),
                picks(compiled, { accept_language = "en, de;q=0", user_agent = UA.iphone }),
                picks(compiled, { accept_language = "en", user_agent = UA.windows }),
            }
        end
        local first = answers()
        assert.same({ "https://a.example/", "https://b.example/" }, first)
        assert.same(first, answers())
        for i = 1, memo.SIZE + 1 do
            picks(compiled, { accept_language = "x-" .. i, user_agent = "agent " .. i })
        end
        assert.same(first, answers())
        -- Longer than a memo keeps: worked out at each request, the same.
        local long = "de, " .. ("en;q=0.1, "):rep(memo.TEXT / 10)
        assert.equal("https://a.example/", (picks(compiled, { accept_language = long })))
        assert.equal("https://a.example/", (picks(compiled, { accept_language = long })))
    end)

    it("splits by weight, the same visitor always to the same destination", function()
        local compiled = assert(rules.compile(nil, {
            { url = "https://a.example/", weight = 70 },
            { url = "https://b.example/", weight = 20 },
            { url = "https://c.example/", weight = 10 },
        }, safe))
        local counts = {}
        for visitor = 0, 9999 do
            local url, label = picks(compiled, { visitor = visitor * 7919 })
            counts[label] = (counts[label] or 0) + 1
            assert.equal(url, (picks(compiled, { visitor = visitor * 7919 })))
        end
        assert.same({ ab1 = 7000, ab2 = 2000, ab3 = 1000 }, counts)
    end)

    it("uses the split only when no rule matched", function()
        local compiled = assert(rules.compile(
            { { url = "https://r.example/", conditions = { { type = "country", value = "NL" } } } },
            { { url = "https://a.example/", weight = 1 },
                { url = "https://b.example/", weight = 1 } },
            safe))
        assert.same({ "https://r.example/", "1" },
            { picks(compiled, { country = "NL", visitor = 1 }) })
        assert.same({ "https://b.example/", "ab2" },
            { picks(compiled, { country = "BE", visitor = 1 }) })
        assert.same({ "https://a.example/", "ab1" }, { picks(compiled, { visitor = 4 }) })
    end)
end)

describe("an app's targets (ios_url, android_url)", function()
    local apps = { ios = "https://apps.apple.com/app/id1", android = "https://play.example/app" }

    it("send each device to its app after the rules, before the split", function()
        local compiled = assert(rules.compile(
            { { url = "https://rule.example/", conditions = { { type = "query", key = "r" } } } },
            { { url = "https://a.example/", weight = 1 },
                { url = "https://b.example/", weight = 1 } },
            safe, apps))
        local url, label = picks(compiled, { user_agent = UA.iphone, args = {}, visitor = 0 })
        assert.equal(apps.ios, url)
        assert.is_nil(label)
        local android = { user_agent = UA.android, args = {}, visitor = 0 }
        assert.equal(apps.android, (picks(compiled, android)))
        assert.equal("https://rule.example/",
            (picks(compiled, { user_agent = UA.iphone, args = { r = true }, visitor = 0 })))
        url, label = picks(compiled, { user_agent = UA.windows, args = {}, visitor = 0 })
        assert.equal("https://a.example/", url)
        assert.equal("ab1", label)
    end)

    it("make a link without rules one to pick for, a device without one left out", function()
        local compiled = assert(rules.compile(nil, nil, safe, { ios = apps.ios }))
        assert.equal(apps.ios, (picks(compiled, { user_agent = UA.ipad })))
        assert.is_nil((picks(compiled, { user_agent = UA.android })))
        assert.is_nil(rules.compile(nil, nil, safe, {}))
    end)

    it("refuse a target that is not a safe url", function()
        local compiled, err = rules.compile(nil, nil, safe, { android = "javascript:alert(1)" })
        assert.is_nil(compiled)
        assert.equal("android_url is not a safe url", err)
    end)
end)
