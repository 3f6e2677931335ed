// The Node receiver of docs/webhooks.md, as it is there but for where it
// takes its secret and port (the environment) and what it prints (each
// event handled, a JSON line, for tests/test_webhook_receivers.py).
const express = require("express");
const { Webhook } = require("standardwebhooks");
const hook = new Webhook(process.env.WEBHOOK_SECRET); // whsec_...
const seen = new Set();
express().post("/slingshot", express.raw({ type: "application/json" }), (req, res) => {
  let event;
  try { event = hook.verify(req.body.toString(), req.headers); } catch { return res.sendStatus(400); }
  if (!seen.has(req.headers["webhook-id"])) {
    seen.add(req.headers["webhook-id"]);
    console.log(JSON.stringify({ id: req.headers["webhook-id"], type: event.type }));
  }
  res.sendStatus(204);
}).listen(Number(process.env.PORT), "127.0.0.1", () => console.log(JSON.stringify({ listening: true })));
