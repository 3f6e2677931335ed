package.path = "./?.lua;" .. package.path
local link = require("slingshot.linkvalue")

describe("link.decode", function()
    it("reads every contract field", function()
        local value = assert(link.decode('{"id":42,"url":"https://e.com/a","status":308,'
            .. '"active":false,"valid_since":1600000000,"expires_at":1700000000,"max_visits":5,'
            .. '"forward_query":true,"password":true,"password_version":"3f9a0c",'
            .. '"unlock_url":"https://d.example/unlock/","listed":true,"blocked":"Phishing.",'
            .. '"future":1}', "v:"))
        assert.same({ id = "42", url = "https://e.com/a", status = 308, active = false,
            listed = "block", blocked = "Phishing.", valid_since = 1600000000,
            expires_at = 1700000000, timed = true,
            max_visits = 5, visits_key = "v:42", forward_query = true, locked = true,
            password_version = "3f9a0c", plain = false }, value)
    end)

    it("reads a listed link as never plain and its state as listed, whatever else it is", function()
        local value = assert(link.decode('{"id":1,"url":"https://e.com/","listed":true}'))
        assert.is_false(value.plain)
        assert.equal("listed", link.state(value, 0))
        value = assert(link.decode('{"id":1,"url":"https://e.com/","listed":true,"active":false}'))
        assert.equal("listed", link.state(value, 0))
        value = assert(link.decode('{"id":1,"url":"https://e.com/","listed":"yes"}'))
        assert.is_false(value.listed)
        assert.equal("redirect", link.state(value, 0))
    end)

    it("reads an app's targets into its rules, null as none", function()
        local value = assert(link.decode('{"id":1,"url":"https://e.com/",'
            .. '"ios_url":"https://apps.example/i","android_url":null}'))
        assert.is_false(value.plain)
        assert.equal(1, #value.rules.rules)
        value = assert(link.decode('{"id":1,"url":"https://e.com/",'
            .. '"ios_url":null,"android_url":null}'))
        assert.is_true(value.plain)
        local bad, err = link.decode('{"id":1,"url":"https://e.com/","ios_url":"javascript:x"}')
        assert.is_nil(bad)
        assert.equal("link rules: ios_url is not a safe url", err)
    end)

    it("reads a listed link to warn of as warned, never plain", function()
        local value = assert(link.decode('{"id":1,"url":"https://e.com/","listed":"warn"}'))
        assert.is_false(value.plain)
        assert.equal("warned", link.state(value, 0))
    end)

    it("reads a link blocked by staff as blocked, whatever else it is, with their words", function()
        local value = assert(link.decode('{"id":1,"url":"https://e.com/","listed":"warn",'
            .. '"active":false,"blocked":"Taken down for phishing."}'))
        assert.is_false(value.plain)
        assert.equal("blocked", link.state(value, 0))
        assert.equal("Taken down for phishing.", value.blocked)
        value = assert(link.decode('{"id":1,"url":"https://e.com/","blocked":""}'))
        assert.equal("blocked", link.state(value, 0))
        value = assert(link.decode('{"id":1,"url":"https://e.com/","blocked":true}'))
        assert.equal("redirect", link.state(value, 0))
    end)

    it("reads a missing password_version, as an older publisher writes it, as empty", function()
        for _, fields in ipairs({ '"password":true', '"password":true,"password_version":null',
                '"password":false' }) do
            local value = assert(link.decode('{"id":1,"url":"https://e.com/",' .. fields .. '}'))
            assert.equal("", value.password_version, fields)
        end
    end)

    it("locks a link with a password, as this publisher and an older one say it", function()
        for _, fields in ipairs({ '"password":true,"unlock_url":"https://d.example/unlock/"',
                '"password":true', '"unlock_url":"https://d.example/unlock/42/"',
                '"password":false,"unlock_url":"https://d.example/unlock/42/"',
                '"unlock_url":"javascript:x"' }) do
            local value = assert(link.decode('{"id":1,"url":"https://e.com/",' .. fields .. '}'))
            assert.is_true(value.locked, fields)
            assert.is_false(value.plain, fields)
        end
        for _, fields in ipairs({ '"password":false,"unlock_url":null', '"password":null' }) do
            local value = assert(link.decode('{"id":1,"url":"https://e.com/",' .. fields .. '}'))
            assert.is_false(value.locked, fields)
            assert.is_true(value.plain, fields)
        end
    end)

    it("marks a link plain when a request needs nothing but its target", function()
        local plain = assert(link.decode('{"id":1,"url":"https://e.com/","active":true,'
            .. '"valid_since":null,"expires_at":null,"max_visits":null,"unlock_url":null}'))
        assert.is_true(plain.plain)
        assert.is_false(plain.timed)
        assert.is_nil(plain.max_visits)
        assert.is_nil(plain.visits_key)
        for _, extra in ipairs({ '"active":false', '"valid_since":1', '"expires_at":1',
                '"max_visits":1', '"password":true', '"unlock_url":"https://d.example/u"' }) do
            local value = assert(link.decode('{"id":1,"url":"https://e.com/",' .. extra .. '}'))
            assert.is_false(value.plain, extra)
        end
    end)

    it("compiles rules and a split once, which makes a link not plain", function()
        local value = assert(link.decode('{"id":1,"url":"https://e.com/","rules":[{"url":'
            .. '"https://r.com/","conditions":[{"type":"country","value":"NL"}]}],'
            .. '"forward_query":true}'))
        assert.is_false(value.plain)
        assert.equal("https://r.com/", value.rules.rules[1].url)
        local none = assert(link.decode('{"id":1,"url":"https://e.com/","rules":[],"split":[]}'))
        assert.is_nil(none.rules)
        assert.is_true(none.plain)
        assert.equal("https://r.com/?a=1", link.target(value, "a=1", "https://r.com/"))
    end)

    it("defaults status to 302 and active to true", function()
        local value = assert(link.decode('{"id":9007199254740991,"url":"http://e.com/"}'))
        assert.equal("9007199254740991", value.id)
        assert.equal(302, value.status)
        assert.is_true(value.active)
        assert.is_nil(value.expires_at)
        assert.is_false(value.forward_query)
    end)

    it("refuses values that break the contract", function()
        for _, raw in ipairs({ "not json", "[]", "{}", '{"id":1,"url":"javascript:alert(1)"}',
                '{"id":1,"url":"https://e.com/\\r\\nX: y"}', '{"id":1,"url":"https://e.com/ a"}',
                '{"id":1,"url":"https://e.com/","status":200}', '{"url":"https://e.com/"}',
                '{"id":"1","url":"https://e.com/"}', '{"id":0,"url":"https://e.com/"}',
                '{"id":1.5,"url":"https://e.com/"}',
                '{"id":9007199254740992,"url":"https://e.com/"}',
                '{"id":1,"url":"https://e.com/","max_visits":0}',
                '{"id":1,"url":"https://e.com/","max_visits":"5"}',
                '{"id":1,"url":"https://e.com/","password":"yes"}',
                '{"id":1,"url":"https://e.com/","password":1}',
                '{"id":1,"url":"https://e.com/","unlock_url":true}',
                '{"id":1,"url":"https://e.com/","password":true,"password_version":7}',
                '{"id":1,"url":"https://e.com/","password":true,"password_version":"a\\nb"}',
                '{"id":1,"url":"https://e.com/","password":true,"password_version":"a:b"}',
                '{"id":1,"url":"https://e.com/","password":true,"password_version":"'
                    .. string.rep("a", 65) .. '"}',
                '{"id":1,"url":"https://e.com/","rules":[{"url":"javascript:x","conditions":[]}]}',
                '{"id":1,"url":"https://e.com/","split":[{"url":"https://a.com/","weight":1}]}',
            }) do
            local value, err = link.decode(raw)
            assert.is_nil(value, raw)
            assert.is_string(err)
        end
    end)
end)

describe("link.state", function()
    it("tells disabled, scheduled, expired and live links apart", function()
        assert.equal("disabled", link.state({ active = false }, 10))
        assert.equal("scheduled", link.state({ active = true, valid_since = 11 }, 10))
        assert.equal("redirect",
            link.state({ active = true, valid_since = 10, expires_at = 11 }, 10))
        assert.equal("expired", link.state({ active = true, expires_at = 10 }, 10))
        assert.equal("redirect", link.state({ active = true, expires_at = 11 }, 10))
        assert.equal("redirect", link.state({ active = true }, 10))
    end)
end)

describe("link.target", function()
    local function target(url, args)
        return link.target({ url = url, forward_query = true }, args)
    end

    it("merges the request query into the target", function()
        assert.equal("https://e.com/p?a=1", target("https://e.com/p", "a=1"))
        assert.equal("https://e.com/p?x=0&a=1", target("https://e.com/p?x=0", "a=1"))
        assert.equal("https://e.com/p?a=1", target("https://e.com/p?", "a=1"))
        assert.equal("https://e.com/p?x=0&a=1#f", target("https://e.com/p?x=0#f", "a=1"))
        assert.equal("https://e.com/p", target("https://e.com/p", nil))
        assert.equal("https://e.com/p", target("https://e.com/p", ""))
    end)

    it("percent-encodes query bytes a header must not carry", function()
        assert.equal("https://e.com/p?a=%0D%0AX:%20y%7F%C3%A9",
            target("https://e.com/p", "a=\r\nX: y\127\195\169"))
    end)

    it("leaves the target alone when forwarding is off", function()
        assert.equal("https://e.com/p", link.target({ url = "https://e.com/p" }, "a=1"))
    end)
end)
