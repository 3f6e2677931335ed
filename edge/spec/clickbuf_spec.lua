package.path = "./?.lua;" .. package.path
local clickbuf = require("slingshot.clickbuf")
local details = require("spec.spool").details

describe("clickbuf", function()
    it("puts another referer in a click's details, whatever the first one was", function()
        assert.equal(details("::1", "UA", "https://news.example/"),
            clickbuf.with_referer(details("::1", "UA", ""), "https://news.example/"))
        assert.equal(details("10.0.0.1", "", ""),
            clickbuf.with_referer(details("10.0.0.1", "", "https://x.example/a\nb"), ""))
    end)

    it("makes the 16-hex-digit id prefix from random bytes", function()
        assert.equal("0001feff61626364", clickbuf.hex_prefix("\0\1\254\255abcd"))
    end)

    it("cuts long headers, and leaves everything else alone", function()
        local chrome = "Mozilla/5.0 (X11; Linux x86_64) AppleWebKit/537.36 (KHTML, like Gecko) "
            .. "Chrome/131.0.0.0 Safari/537.36"
        for _, case in ipairs({
            { "::1", string.rep("u", 600), string.rep("r", 2000), 512, 1024 },
            { "::1", string.rep("u", 512), string.rep("r", 1024), 512, 1024 },
            { "::1", string.rep("u", 513), "", 512, 0 },
            { "2001:db8::1", "", string.rep("r", 1025), 0, 1024 },
            { "192.0.2.1", chrome, string.rep("r", 900), #chrome, 900 },
            { "::1", string.rep("\226\156\147", 200), "", 512, 0 },
        }) do
            local cut = clickbuf.cut_details(details(case[1], case[2], case[3]))
            local ip, ua, ref = cut:match("^([^\n]*)\n([^\n]*)\n([^\n]*)$")
            local click = { ip = ip, ua = ua, ref = ref }
            assert.equal(case[1], click.ip)
            assert.equal(case[4], #click.ua)
            assert.equal(case[5], #click.ref)
            assert.equal(case[2]:sub(1, case[4]), click.ua)
            assert.equal(case[3]:sub(1, case[5]), click.ref)
        end
    end)
end)
