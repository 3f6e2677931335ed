package.path = "./?.lua;" .. package.path
local config = require("slingshot.config")

local function env(values)
    return function(name) return values[name] end
end

describe("config.parse", function()
    it("has defaults for everything", function()
        local c = config.parse(env({}))
        assert.equal("127.0.0.1", c.redis_primary.host)
        assert.equal(6379, c.redis_primary.port)
        assert.is_nil(c.redis_primary.password)
        assert.same(c.redis_primary, c.redis_links)
        assert.same(c.redis_primary, c.redis_clicks)
    end)

    it("reads links and clicks from their own servers, defaulting to the primary's", function()
        local c = config.parse(env({
            REDIS_HOST = "10.0.0.1", REDIS_PORT = "6390", REDIS_PASSWORD = "pw",
            EDGE_LINKS_REDIS_HOST = "127.0.0.1", EDGE_LINKS_REDIS_PORT = "6391",
            EDGE_CLICKS_REDIS_PORT = "6392", EDGE_CLICKS_REDIS_PASSWORD = "other",
            EDGE_CLICKS_REDIS_DB = "2",
        }))
        assert.same({ host = "127.0.0.1", port = 6391, password = "pw", db = 0,
            pool = "127.0.0.1:6391:0" }, c.redis_links)
        assert.same({ host = "10.0.0.1", port = 6392, password = "other", db = 2,
            pool = "10.0.0.1:6392:2" }, c.redis_clicks)
        assert.has_error(function() config.parse(env({ EDGE_LINKS_REDIS_PORT = "x" })) end)
    end)

    it("reads the Sentinels that name the primary", function()
        assert.same({}, config.parse(env({})).redis_sentinels)
        local c = config.parse(env({ REDIS_SENTINELS = "10.0.0.1:26379, [::1]:26380" }))
        assert.same({ { host = "10.0.0.1", port = 26379 }, { host = "::1", port = 26380 } },
            c.redis_sentinels)
        assert.equal("slingshot", c.redis_sentinel_master)
        assert.has_error(function() config.parse(env({ REDIS_SENTINELS = "10.0.0.1" })) end)
        assert.has_error(function() config.parse(env({ REDIS_SENTINELS = "h:70000" })) end)
    end)

    it("reads numbers and text", function()
        local c = config.parse(env({
            REDIS_PORT = "6390", REDIS_PASSWORD = "pw", EDGE_CACHE_SIZE = "10",
        }))
        assert.equal(6390, c.redis_primary.port)
        assert.equal("pw", c.redis_primary.password)
        assert.equal(10, c.cache_size)
    end)

    it("reads the slug rules, redirect targets and the metrics allow list", function()
        local c = config.parse(env({
            EDGE_SLUG_ALPHABET = "a-z", EDGE_SLUG_MIN_LENGTH = "3", EDGE_SLUG_MAX_LENGTH = "9",
            EDGE_NOT_FOUND_URL = "https://example.com/404", EDGE_ROOT_URL = "http://example.com/",
            EDGE_METRICS_ALLOW = "10.0.0.0/8",
        }))
        assert.is_true(c.slug_alphabet[string.byte("q")])
        assert.is_nil(c.slug_alphabet[string.byte("Q")])
        assert.equal(3, c.slug_min_length)
        assert.equal(9, c.slug_max_length)
        assert.equal("https://example.com/404", c.not_found_url)
        assert.equal("http://example.com/", c.root_url)
        assert.equal(1, #c.metrics_allow)
        assert.equal(2, #config.parse(env({})).metrics_allow)
        assert.is_nil(config.parse(env({})).not_found_url)
    end)

    it("refuses bad settings with the variable's name", function()
        assert.has_error(function() config.parse(env({ EDGE_NOT_FOUND_URL = "/404" })) end,
            'EDGE_NOT_FOUND_URL must be an absolute http(s) URL without spaces, got "/404"')
        assert.has_error(function()
            config.parse(env({ EDGE_ROOT_URL = "https://e.com/\r\nX: y" }))
        end)
        assert.has_error(function() config.parse(env({ EDGE_METRICS_ALLOW = "everyone" })) end,
            "EDGE_METRICS_ALLOW: not an address or CIDR range: everyone")
        assert.has_error(function() config.parse(env({ EDGE_SLUG_ALPHABET = "a/" })) end)
        assert.has_error(function()
            config.parse(env({ EDGE_SLUG_MIN_LENGTH = "5", EDGE_SLUG_MAX_LENGTH = "4" }))
        end, "EDGE_SLUG_MIN_LENGTH (5) is above EDGE_SLUG_MAX_LENGTH (4)")
    end)

    it("refuses bad numbers with the variable's name", function()
        assert.has_error(function() config.parse(env({ EDGE_CACHE_SIZE = "lots" })) end,
            'EDGE_CACHE_SIZE must be a number >= 1, got "lots"')
        assert.has_error(function() config.parse(env({ REDIS_DB = "-1" })) end)
    end)
end)
