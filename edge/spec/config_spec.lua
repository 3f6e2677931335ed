package.path = "./?.lua;" .. package.path
local config = require("slingshot.config")

local function env(values)
    return function(name) return values[name] end
end

describe("config.parse", function()
    it("has defaults for everything", function()
        local c = config.parse(env({}))
        assert.equal("127.0.0.1", c.redis_host)
        assert.equal(6379, c.redis_port)
        assert.is_nil(c.redis_password)
        assert.equal("private, no-store", c.cache_control)
    end)

    it("reads numbers and text", function()
        local c = config.parse(env({
            REDIS_PORT = "6390", REDIS_PASSWORD = "pw", EDGE_CACHE_SIZE = "10",
        }))
        assert.equal(6390, c.redis_port)
        assert.equal("pw", c.redis_password)
        assert.equal(10, c.cache_size)
    end)

    it("refuses bad numbers with the variable's name", function()
        assert.has_error(function() config.parse(env({ EDGE_CACHE_SIZE = "lots" })) end,
            'EDGE_CACHE_SIZE must be a number >= 1, got "lots"')
        assert.has_error(function() config.parse(env({ REDIS_DB = "-1" })) end)
    end)
end)
