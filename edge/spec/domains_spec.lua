package.path = "./?.lua;" .. package.path
local domains = require("slingshot.domains")

local SETTINGS = { root_url = "https://env.example/", not_found_url = "https://env.example/404" }

describe("domains.build", function()
    it("keeps the default domain's keys bare and prefixes the others'", function()
        local hosts, default, multi, errors = domains.build({
            "sho.rt", '{"default":true,"root_url":null,"not_found_url":"https://sho.rt.example/x"}',
            "go.example.com", '{"default":false,"root_url":"https://www.example.com/",'
                .. '"not_found_url":null,"https_redirect":true}',
        }, SETTINGS)
        assert.same({}, errors)
        assert.is_true(multi)
        assert.equal(hosts["sho.rt"], default)
        assert.is_nil(default.prefix)
        -- The default domain's own redirect wins; EDGE_ROOT_URL fills in what it lacks.
        assert.equal("https://sho.rt.example/x", default.not_found_url)
        assert.equal("https://env.example/", default.root_url)
        local go = hosts["go.example.com"]
        assert.equal("go.example.com/", go.prefix)
        assert.equal("https://www.example.com/", go.root_url)
        assert.is_nil(go.not_found_url)
        assert.is_true(go.https_redirect)
    end)

    it("uses the environment's redirects until the hash names a default domain", function()
        local hosts, default, multi = domains.build({}, SETTINGS)
        assert.same({}, hosts)
        assert.is_false(multi)
        assert.is_true(default.default)
        assert.equal("https://env.example/404", default.not_found_url)
    end)

    it("is not multi with the default domain alone, and skips broken entries", function()
        local flat = { "sho.rt", '{"default":true}', "bad.example", "[" }
        local _, _, multi, errors = domains.build(flat, SETTINGS)
        assert.is_false(multi)
        assert.equal(1, #errors)
        assert.matches("bad.example", errors[1])
    end)

    it("refuses redirects a Location header could not carry", function()
        local domain = domains.decode("x.example",
            '{"root_url":"javascript:alert(1)","not_found_url":"https://x/\\r\\nA: b"}')
        assert.is_nil(domain.root_url)
        assert.is_nil(domain.not_found_url)
    end)

    it("labels its orphan visits with their kind, and the host unless it is the default", function()
        local hosts, default = domains.build({ "sho.rt", '{"default":true}',
            "go.example.com", '{"default":false}' }, SETTINGS)
        assert.same({ unknown = "unknown", disabled = "disabled", scheduled = "scheduled",
            expired = "expired", limit = "limit", password = "password", listed = "listed",
            blocked = "blocked" }, default.orphan)
        assert.same({ unknown = "unknown go.example.com", disabled = "disabled go.example.com",
            scheduled = "scheduled go.example.com", expired = "expired go.example.com",
            limit = "limit go.example.com", password = "password go.example.com",
            listed = "listed go.example.com", blocked = "blocked go.example.com" },
            hosts["go.example.com"].orphan)
        local _, fallback = domains.build({}, SETTINGS)
        assert.equal("unknown", fallback.orphan.unknown)
    end)

    it("skips a host that a click record could not carry on one line", function()
        local _, err = domains.decode("a b.example", '{"default":false}')
        assert.matches("not a host name", err)
        _, err = domains.decode(string.rep("a", 254), '{"default":false}')
        assert.matches("not a host name", err)
        assert.is_table(domains.decode(string.rep("a", 253), '{"default":false}'))
    end)

    it("answers an unknown host with the default domain", function()
        local hosts, default, multi = domains.build({ "a.example", '{"default":true}',
            "b.example", '{"default":false}' }, SETTINGS)
        domains.use(hosts, default, multi)
        assert.equal(hosts["b.example"], domains.for_host("b.example"))
        assert.equal(default, domains.for_host("unknown.example"))
        assert.equal(2, domains.count())
    end)
end)

describe("domains.refresh", function()
    -- A Redis client that answers HGETALL from a table, or fails.
    local function client(flat)
        local asked = 0
        return {
            hgetall = function()
                asked = asked + 1
                if flat then
                    return flat
                end
                return nil, "timeout"
            end,
            asked = function() return asked end,
        }
    end
    local settings = { root_url = SETTINGS.root_url, not_found_url = SETTINGS.not_found_url,
        cache_ttl = 60 }
    local flat = { "go.example.com", '{"default":false}' }

    it("reads the domains when forgotten, then only once cache_ttl has passed", function()
        local red = client(flat)
        domains.forget()
        local ok, skipped = domains.refresh(red, "k", settings, 1000)
        assert.is_true(ok)
        assert.same({}, skipped)
        assert.is_true(domains.multi)
        assert.is_true(domains.refresh(red, "k", settings, 1060))
        assert.equal(1, red.asked())
        domains.refresh(red, "k", settings, 1060.5)
        assert.equal(2, red.asked())
        domains.forget()  -- a change notification named a domain
        domains.refresh(red, "k", settings, 1061)
        assert.equal(3, red.asked())
    end)

    it("after a failure keeps what it had and asks again only after cache_ttl", function()
        domains.forget()
        domains.refresh(client(flat), "k", settings, 2000)
        local down = client(nil)
        domains.forget()
        local ok, err = domains.refresh(down, "k", settings, 2001)
        assert.is_nil(ok)
        assert.matches("timeout", err)
        assert.is_true(domains.multi)  -- the domains read before still answer
        assert.is_true(domains.refresh(down, "k", settings, 2030))
        assert.equal(1, down.asked())
        assert.is_nil(domains.refresh(down, "k", settings, 2062))
        assert.equal(2, down.asked())
    end)
end)
