-- Redirect rules and A/B splits of a link (docs/contract.md, "Redirect
-- rules"). Pure logic: no ngx, so busted tests it directly.
--
-- `compile` runs once per decoded link and does every piece of work that
-- does not depend on the request: values lower-cased, language tags split,
-- weights summed into thresholds. `pick` runs per request and asks the
-- request (`req`, below) only for what a condition of the link needs, at
-- most once each; what it makes of a User-Agent or an Accept-Language
-- header is kept for the next visitor who sends the same (they repeat), so
-- that a request makes no table of its own. An address pattern is a mask
-- and a number, a date a number of seconds: a request compares numbers.
local cidr = require("slingshot.cidr")
local memo = require("slingshot.memo")
local visitor = require("slingshot.visitor")

local type = type
local find = string.find
local lower = string.lower
local upper = string.upper
local sub = string.sub
local match = string.match
local tonumber = tonumber
local tostring = tostring
local floor = math.floor
local assert = assert

local _M = { _VERSION = "0.1.0" }

_M.MAX_RULES = 20
_M.MAX_CONDITIONS = 10
_M.MIN_SPLIT = 2
_M.MAX_SPLIT = 10
_M.MAX_WEIGHT = 100
-- The longest query key or value a condition compares.
_M.MAX_QUERY_TEXT = 200
-- The condition types this edge acts on, and a device and a browser
-- condition's values. A rule with a condition of another type, or with a
-- device or browser this edge does not know, never matches (a newer
-- dashboard's).
_M.CONDITION_TYPES = {
    "device", "language", "country", "query", "ip", "browser", "before", "after",
}
_M.DEVICES = visitor.DEVICES
_M.BROWSERS = visitor.BROWSERS
_M.devices = visitor.devices
_M.browser = visitor.browser
_M.languages = visitor.languages

local function set_of(list)
    local set = {}
    for i = 1, #list do
        set[list[i]] = true
    end
    return set
end
local DEVICES = set_of(_M.DEVICES)
local BROWSERS = set_of(_M.BROWSERS)

-- pick's: what devices, browser and languages made of a header's value,
-- which pick only reads.
local memo_devices = memo.of(visitor.devices)
local memo_browser = memo.of(visitor.browser)
local memo_languages = memo.of(visitor.languages)

-- Whether the language range `want` (lower-case) covers the visitor's tag
-- `tag`: `en` covers `en` and `en-gb`, `en-gb` covers only `en-gb`.
local function covers(want, tag)
    if tag == want then
        return true
    end
    return #tag > #want and sub(tag, 1, #want) == want and sub(tag, #want + 1, #want + 1) == "-"
end

local function query_text(value)
    return type(value) == "string" and #value <= _M.MAX_QUERY_TEXT
end

local function days_from_civil(y, m, d)
    if m <= 2 then
        y = y - 1
    end
    local era = floor(y / 400)
    local yoe = y - era * 400
    local doy = floor((153 * (m + (m > 2 and -3 or 9)) + 2) / 5) + d - 1
    return era * 146097 + yoe * 365 + floor(yoe / 4) - floor(yoe / 100) + doy - 719468
end

-- A moment as the dashboard keeps it ("2030-01-31T23:59:59Z", UTC, to the
-- second) in seconds since 1970, or nil.
function _M.moment(text)
    if type(text) ~= "string" then
        return nil
    end
    local y, mo, d, h, mi, s = match(text, "^(%d%d%d%d)%-(%d%d)%-(%d%d)T(%d%d):(%d%d):(%d%d)Z$")
    y, mo, d, h, mi, s = tonumber(y), tonumber(mo), tonumber(d), tonumber(h), tonumber(mi),
        tonumber(s)
    if not y or mo < 1 or mo > 12 or d < 1 or d > 31 or h > 23 or mi > 59 or s > 59 then
        return nil
    end
    return days_from_civil(y, mo, d) * 86400 + h * 3600 + mi * 60 + s
end

-- A condition whose value this edge does not know: it never matches.
local UNKNOWN = { kind = "unknown" }

local function named(kind, known)
    return function(value)
        if type(value) ~= "string" then
            return nil, kind .. " condition has no value"
        end
        value = lower(value)
        if not known[value] then
            return UNKNOWN
        end
        return { kind = kind, value = value }
    end
end

local function moment(kind)
    return function(value)
        local at = _M.moment(value)
        if not at then
            return nil, kind .. " condition is not a moment such as 2030-01-31T23:59:59Z"
        end
        return { kind = kind, at = at }
    end
end

-- A compiler for each of CONDITION_TYPES: the condition's compiled form,
-- or nil and a reason.
local COMPILE = {
    device = named("device", DEVICES),
    browser = named("browser", BROWSERS),
    before = moment("before"),
    after = moment("after"),
    ip = function(value)
        local pattern = cidr.pattern(value)
        if not pattern then
            return nil, "ip condition is not an address, a CIDR range or a wildcard"
        end
        pattern.kind = "ip"
        return pattern
    end,
    language = function(value)
        if type(value) ~= "string" or not find(value, "^%a[%a%d%-]*$") then
            return nil, "language condition is not a language tag"
        end
        return { kind = "language", value = lower(value) }
    end,
    country = function(value)
        if type(value) ~= "string" or not find(value, "^%a%a$") then
            return nil, "country condition is not a two-letter code"
        end
        return { kind = "country", value = upper(value) }
    end,
    query = function(value, key)
        if not query_text(key) or key == "" then
            return nil, "query condition has no key of 1 to " .. _M.MAX_QUERY_TEXT .. " characters"
        end
        if not query_text(value) then
            if type(value) == "string" then
                return nil, "query condition's value is over " .. _M.MAX_QUERY_TEXT .. " characters"
            end
            value = nil  -- JSON null: the key only has to be present
        end
        return { kind = "query", key = key, value = value }
    end,
}
for i = 1, #_M.CONDITION_TYPES do
    assert(COMPILE[_M.CONDITION_TYPES[i]], "no compiler for a declared condition type")
end

local function compile_condition(c)
    if type(c) ~= "table" then
        return nil, "condition is not an object"
    end
    local compile = COMPILE[c.type]
    if compile then
        return compile(c.value, c.key)
    end
    -- A condition type this edge does not know (a newer dashboard): its
    -- rule never matches, and the link is served as it would be without it.
    return UNKNOWN
end

-- The app targets of a link (`apps`: its ios_url and android_url, each a
-- URL or nil) as rules with a device condition and no label (a click
-- through one is the link's own, as its device says); nil and a reason
-- when one is not a safe URL.
local APP_DEVICES = { "ios", "android" }
local function app_rules(apps, safe_url)
    local made = {}
    for i = 1, #APP_DEVICES do
        local device = APP_DEVICES[i]
        local url = apps[device]
        if url ~= nil then
            if not safe_url(url) then
                return nil, device .. "_url is not a safe url"
            end
            made[#made + 1] = { url = url, conditions = { { kind = "device", value = device } } }
        end
    end
    return made
end

-- The compiled form of a link's `rules` and `split` (JSON arrays, or nil),
-- and of its app targets (`apps`, app_rules'; may be nil), or nil when it
-- has none, so that such a link costs a request one nil check. `safe_url`
-- tells a target the edge may send a visitor to. Returns nil and a reason
-- when a value breaks the contract.
function _M.compile(rules, split, safe_url, apps)
    if type(rules) ~= "table" then
        rules = {}
    end
    if type(split) ~= "table" then
        split = {}
    end
    local for_apps = {}
    if apps then
        local err
        for_apps, err = app_rules(apps, safe_url)
        if not for_apps then
            return nil, err
        end
    end
    if #rules == 0 and #split == 0 and #for_apps == 0 then
        return nil
    end
    if #rules > _M.MAX_RULES then
        return nil, "more than " .. _M.MAX_RULES .. " rules"
    end
    local compiled = { rules = {} }
    for i = 1, #rules do
        local rule = rules[i]
        if type(rule) ~= "table" or not safe_url(rule.url) then
            return nil, "rule " .. i .. " has no safe url"
        end
        local conditions = rule.conditions
        if type(conditions) ~= "table" or #conditions > _M.MAX_CONDITIONS then
            return nil, "rule " .. i .. " has no list of at most "
                .. _M.MAX_CONDITIONS .. " conditions"
        end
        local out = {}
        for j = 1, #conditions do
            local c, err = compile_condition(conditions[j])
            if not c then
                return nil, "rule " .. i .. " condition " .. j .. ": " .. err
            end
            out[j] = c
        end
        compiled.rules[i] = { url = rule.url, label = tostring(i), conditions = out }
    end
    for i = 1, #for_apps do
        compiled.rules[#compiled.rules + 1] = for_apps[i]
    end
    if #split > 0 then
        if #split < _M.MIN_SPLIT or #split > _M.MAX_SPLIT then
            return nil, "split has not " .. _M.MIN_SPLIT .. " to " .. _M.MAX_SPLIT
                .. " destinations"
        end
        local total = 0
        local destinations = {}
        for i = 1, #split do
            local d = split[i]
            local weight = type(d) == "table" and d.weight
            if type(weight) ~= "number" or weight < 1 or weight > _M.MAX_WEIGHT
                    or weight ~= floor(weight) then
                return nil, "split destination " .. i .. " has no weight of 1 to "
                    .. _M.MAX_WEIGHT
            end
            if not safe_url(d.url) then
                return nil, "split destination " .. i .. " has no safe url"
            end
            total = total + weight
            destinations[i] = { url = d.url, label = "ab" .. i, below = total }
        end
        compiled.split = destinations
        compiled.total = total
    end
    return compiled
end

-- What a request tells `pick`, each a function called at most once a pick
-- and only when a condition needs it:
--   req.user_agent()       the User-Agent header, or nil
--   req.accept_language()  the Accept-Language header, or nil
--   req.args()             the query arguments as ngx.req.get_uri_args gives
--                          them (a value is a string, true, or a list)
--   req.country()          the visitor's ISO 3166 alpha-2 code, or nil/""
--   req.visitor()          a non-negative integer that is the same for the
--                          same visitor (a hash of address and User-Agent)
--   req.address()          the visitor's address as the click records it
--   req.now()              the request's time in seconds since 1970
local function arg_matches(got, want)
    if got == nil then
        return false
    elseif want == nil then
        return true
    elseif type(got) == "table" then
        for i = 1, #got do
            if got[i] == want then
                return true
            end
        end
        return false
    end
    return got == want
end

-- The target for this request and the label of what chose it: the first
-- rule whose conditions all hold ("1".."n"; nil for an app target), else
-- the split's destination for this visitor ("ab1".."abn"), else nil and
-- nil (the link's own url).
function _M.pick(compiled, req)
    local devices, browser, languages, args, country, address, now
    local rules = compiled.rules
    for i = 1, #rules do
        local rule = rules[i]
        local conditions = rule.conditions
        local all = true
        for j = 1, #conditions do
            local c = conditions[j]
            local kind = c.kind
            local ok = false
            if kind == "device" then
                devices = devices or memo_devices(req.user_agent())
                ok = devices[c.value] == true
            elseif kind == "language" then
                languages = languages or memo_languages(req.accept_language())
                local want = c.value
                for k = 1, #languages do
                    if covers(want, languages[k]) then
                        ok = true
                        break
                    end
                end
            elseif kind == "country" then
                if country == nil then
                    country = req.country() or ""
                    country = upper(country)
                end
                ok = country == c.value
            elseif kind == "query" then
                args = args or req.args() or {}
                ok = arg_matches(args[c.key], c.value)
            elseif kind == "ip" then
                if address == nil then
                    address = cidr.visitor(req.address())
                end
                ok = cidr.matches(c, address)
            elseif kind == "browser" then
                browser = browser or memo_browser(req.user_agent())
                ok = browser == c.value
            elseif kind == "before" then
                now = now or req.now()
                ok = now < c.at
            elseif kind == "after" then
                now = now or req.now()
                ok = now > c.at
            end
            if not ok then
                all = false
                break
            end
        end
        if all then
            return rule.url, rule.label
        end
    end
    local split = compiled.split
    if split then
        local point = req.visitor() % compiled.total
        for i = 1, #split do
            local d = split[i]
            if point < d.below then
                return d.url, d.label
            end
        end
    end
    return nil, nil
end

return _M
