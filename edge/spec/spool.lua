-- For the specs of the click journal: a spool folder of its own for each
-- test, made as the edge makes it, and whether a file is there.
local spooldir = require("slingshot.spooldir")

local _M = {}

-- Gives each test of the describe block it is called in a new spool
-- folder, passed to `use` before the test and removed after it; busted's
-- `before_each` and `after_each` are the spec's to pass.
function _M.per_test(before_each, after_each, use)
    local dir
    before_each(function()
        dir = os.tmpname()
        os.remove(dir)
        assert(spooldir.prepare_dir(dir, "nobody"))
        use(dir)
    end)
    after_each(function()
        os.execute("rm -rf " .. dir)
    end)
end

-- What a click records of its visitor (clicks.lua reads it from nginx).
function _M.details(ip, ua, ref)
    return { ip = ip, ua = ua, ref = ref }
end

-- Adds a click from `visitor` (details) to `journal`, as clicks.lua does.
function _M.add(journal, slug, link_id, rule, visitor, kind, when)
    local ip, ua, ref = visitor.ip, visitor.ua, visitor.ref
    return journal:add(slug, link_id, rule, ip, #ip, ua, #ua, ref, #ref, kind, when)
end

-- When the tests' clicks are made: "1763800000.123" in their records.
_M.TIME = 1763800000.123

function _M.exists(path)
    local f = io.open(path, "rb")
    if f then
        f:close()
    end
    return f ~= nil
end

return _M
