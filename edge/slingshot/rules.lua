-- Redirect rules and A/B splits of a link (docs/contract.md, "Redirect
-- rules"). Pure logic: no ngx, so busted tests it directly.
--
-- `compile` runs once per decoded link and does every piece of work that
-- does not depend on the request: values lower-cased, language tags split,
-- weights summed into thresholds. `pick` runs per request and asks the
-- request (`req`, below) only for what a condition of the link needs, at
-- most once each; what it makes of a User-Agent or an Accept-Language
-- header is kept for the next visitor who sends the same (they repeat), so
-- that a request makes no table of its own.
local memo = require("slingshot.memo")

local type = type
local find = string.find
local lower = string.lower
local upper = string.upper
local sub = string.sub
local gmatch = string.gmatch
local match = string.match
local tonumber = tonumber
local tostring = tostring
local floor = math.floor
local sort = table.sort
local assert = assert

local _M = { _VERSION = "0.1.0" }

_M.MAX_RULES = 20
_M.MAX_CONDITIONS = 10
_M.MIN_SPLIT = 2
_M.MAX_SPLIT = 10
_M.MAX_WEIGHT = 100
-- The longest query key or value a condition compares.
_M.MAX_QUERY_TEXT = 200
-- The condition types this edge acts on, and a device condition's values.
-- A rule with a condition of another type never matches (a newer dashboard's).
_M.CONDITION_TYPES = { "device", "language", "country", "query" }
_M.DEVICES = { "ios", "android", "mobile", "desktop", "windows", "macos", "linux" }

-- User-Agent tokens of each device condition, looked for as plain text.
-- iPadOS presents itself as a Mac, and is served as one.
local IOS = { "iPhone", "iPad", "iPod" }
local ANDROID = { "Android" }
local WINDOWS = { "Windows" }
local MACOS = { "Macintosh" }
local LINUX = { "Linux", "X11", "CrOS" }
local MOBILE_HINT = { "Mobile", "Mobi" }

local function has_any(ua, tokens)
    for i = 1, #tokens do
        if find(ua, tokens[i], 1, true) then
            return true
        end
    end
    return false
end

-- The device classes of a User-Agent, as a set of condition values.
function _M.devices(ua)
    local set = {}
    if ua == nil or ua == "" then
        return set
    end
    local ios = has_any(ua, IOS)
    local android = not ios and has_any(ua, ANDROID)
    if ios then
        set.ios = true
    elseif android then
        set.android = true
    elseif has_any(ua, WINDOWS) then
        set.windows = true
    elseif has_any(ua, MACOS) then
        set.macos = true
    elseif has_any(ua, LINUX) then
        set.linux = true
    end
    if ios or android or has_any(ua, MOBILE_HINT) then
        set.mobile = true
    elseif set.windows or set.macos or set.linux then
        set.desktop = true
    end
    return set
end

local DEVICES = {}
for i = 1, #_M.DEVICES do
    DEVICES[_M.DEVICES[i]] = true
end

local function by_preference(a, b)
    if a.q ~= b.q then
        return a.q > b.q
    end
    return a.at < b.at
end

-- The visitor's languages from an Accept-Language header, lower-cased, in
-- the order of their q-values (highest first, the header's order among
-- equals); those with q=0 (refused) and `*` are left out.
function _M.languages(header)
    local found = {}
    if type(header) ~= "string" then
        return found
    end
    local n = 0
    for item in gmatch(header, "[^,]+") do
        local tag = match(item, "^%s*([%a%d%-]+)")
        if tag then
            local q = 1
            local qs = match(item, ";%s*[qQ]%s*=%s*([%d%.]+)")
            if qs then
                q = tonumber(qs) or 0
            end
            if q > 0 then
                n = n + 1
                found[n] = { tag = lower(tag), q = q, at = n }
            end
        end
    end
    sort(found, by_preference)
    local tags = {}
    for i = 1, n do
        tags[i] = found[i].tag
    end
    return tags
end

-- pick's: the tables devices and languages made for a header's value,
-- which pick only reads.
local memo_devices = memo.of(_M.devices)
local memo_languages = memo.of(_M.languages)

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

-- A compiler for each of CONDITION_TYPES: the condition's compiled form,
-- or nil and a reason.
local COMPILE = {
    device = function(value)
        if type(value) ~= "string" or not DEVICES[lower(value)] then
            return nil, "device condition has an unknown value"
        end
        return { kind = "device", value = lower(value) }
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
    return { kind = "unknown" }
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
    local devices, languages, args, country
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
