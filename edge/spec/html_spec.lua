package.path = "./?.lua;" .. package.path
local html = require("slingshot.html")

describe("html.escape", function()
    it("makes text safe in an element and in a quoted attribute", function()
        assert.equal("&lt;a href=&quot;x&quot; title=&#39;y&#39;&gt;&amp;&lt;/a&gt;",
            html.escape("<a href=\"x\" title='y'>&</a>"))
        assert.equal("plain text, é and ’", html.escape("plain text, é and ’"))
    end)
end)

describe("html.percent", function()
    it("writes a byte as %XX, upper-case", function()
        assert.equal("%00%20%22%FF", ("\0 \"\255"):gsub(".", html.percent))
    end)
end)

describe("html.head", function()
    it("opens a page in its language with the one style, its own tags first", function()
        local head = html.head("fr", "Titre", "<meta http-equiv=\"refresh\" content=\"0\">")
        assert.truthy(head:find("^<!doctype html><html lang=\"fr\"><head><meta charset=\"utf%-8\">"
            .. "<meta http%-equiv=\"refresh\" content=\"0\"><meta name=\"viewport\""))
        assert.truthy(head:find("<title>Titre</title><style>" .. html.STYLE
            .. "</style></head><body><main>", 1, true))
        assert.truthy(html.CSP:find("^default%-src 'none'; style%-src 'sha256%-"))
    end)
end)
