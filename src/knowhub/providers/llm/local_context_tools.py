"""Interchangeable tools and services people choose between (databases, frameworks, clouds,
payment providers, chat apps …): general technical vocabulary, not benchmark text.

Why here: the timeline's value classes (:mod:`knowhub.context.commit.slots`: "we switched
to MySQL" replaces PostgreSQL) and the profile extractor (a residence or work place is no
tool: "we moved from PostgreSQL to MySQL" says nothing about where anyone lives) read the
same list, next to the other lexicons of the offline extractors (places, languages, code
words).
"""

from __future__ import annotations

import functools
import re

__all__ = ["EVERYDAY_NAMES", "VALUE_CLASSES", "is_tool_name", "names_a_tool", "value_members"]

#: class → members (``|`` separates names; the first spelling of a ``=`` group is canonical).
VALUE_CLASSES: dict[str, str] = {
    "database": "PostgreSQL=Postgres=Postgresql=PG|MySQL|MariaDB|SQLite|MongoDB=Mongo|Oracle|SQL Server=MSSQL|Cassandra|"
                "DynamoDB|CockroachDB|TiDB|ClickHouse|Supabase|Neo4j|CouchDB|Firestore|DuckDB|Snowflake|BigQuery",
    "cache": "Redis|Memcached|Valkey",
    "backend framework": "Django|Flask|FastAPI|Express=Express.js|Koa|NestJS|Rails=Ruby on Rails|Spring Boot=Spring|Laravel|"
                         "Gin|Echo|Fiber|ASP.NET|Phoenix|Actix|Axum|Rocket|Sinatra|Symfony|Starlette|Tornado|Hono",
    "frontend framework": "React|Vue=Vue.js|Angular|Svelte=SvelteKit|SolidJS|Next.js=Nextjs|Nuxt|Remix|Astro|Ember|jQuery",
    "programming language": "Python|Rust|Go=Golang|Java|Kotlin|TypeScript|JavaScript|C#|C\\+\\+|Ruby|PHP|Swift|Elixir|Scala|Zig",
    "cloud": "AWS=Amazon Web Services|GCP=Google Cloud|Azure|DigitalOcean|Heroku|Vercel|Netlify|Fly.io|Cloudflare|"
             "Alibaba Cloud=阿里云|腾讯云|华为云|Hetzner|Linode|Render|Railway",
    "editor": "VS Code=VSCode=Visual Studio Code|Vim|Neovim|Emacs|IntelliJ|PyCharm|WebStorm|Sublime Text=Sublime|Cursor|Zed|"
              "Xcode|Helix",
    "operating system": "Linux|Ubuntu|Debian|Fedora|Arch Linux|macOS=Mac OS|Windows|FreeBSD|CentOS",
    "js package manager": "npm|yarn|pnpm|bun",
    "python package manager": "pip|poetry|uv|conda|pipenv|pdm",
    "ci": "GitHub Actions|GitLab CI|Jenkins|CircleCI|Travis CI=Travis|Buildkite|Drone CI",
    "message queue": "Kafka|RabbitMQ|RocketMQ|NATS|SQS|Pulsar|ActiveMQ|Kinesis|Google Pub/Sub=Pub/Sub|ZeroMQ|"
                     "transactional outbox=outbox",
    "job queue": "Celery|RQ|Dramatiq|Huey|procrastinate|Sidekiq|Resque|BullMQ|Hangfire|Faktory|APScheduler|XXL-JOB|"
                 "Quartz|Temporal",
    "payment provider": "Stripe|Adyen|PayPal|Braintree|Square|Mollie|Paddle|Razorpay|GoCardless|Worldpay|Checkout.com|"
                        "Lemon Squeezy|支付宝=Alipay|微信支付=WeChat Pay|银联=UnionPay",
    "orchestration": "Kubernetes=k8s|Docker Swarm|Nomad|ECS",
    "orm": "SQLAlchemy|Prisma|Django ORM|TypeORM|Sequelize|Drizzle|Hibernate|GORM|Diesel|Peewee",
    "test framework": "pytest|unittest|Jest|Vitest|Mocha|JUnit",
    "browser automation": "Cypress|Playwright|Selenium|Puppeteer",
    "css framework": "Tailwind=Tailwind CSS|Bootstrap|Bulma|Material UI=MUI|Chakra UI=Chakra",
    "state management": "Redux|MobX|Zustand|Pinia|Vuex",
    "search engine": "Elasticsearch|OpenSearch|Meilisearch|Typesense|Solr",
    "build tool": "Webpack|Vite|esbuild|Rollup|Parcel|Gradle|Maven|Bazel|CMake",
    "mobile framework": "Flutter|React Native|SwiftUI|Jetpack Compose",
    "indentation": "tabs=tab|spaces=space|2 spaces=two spaces|4 spaces=four spaces",
    "theme": "dark mode=dark theme=深色模式|light mode=light theme=浅色模式",
    "chat and alerting": "Slack|Microsoft Teams=MS Teams|PagerDuty|Opsgenie|Discord|Mattermost|Telegram|钉钉=DingTalk|"
                         "飞书=Feishu=Lark|企业微信=WeCom|微信=WeChat|WhatsApp|Google Chat|Zulip",
    "issue tracker": "Jira|Linear|YouTrack|Trello|Asana|ClickUp|Basecamp|Shortcut|GitHub Issues|GitLab Issues|Redmine|"
                     "Bugzilla|禅道|Teambition",
    "docs and notes": "Notion|Confluence|Obsidian|Evernote|OneNote|Google Docs|Coda|语雀|飞书文档",
    "design tool": "Figma|Sketch|Adobe XD|Penpot|Framer",
    "kubernetes packaging": "Helm|Kustomize|Jsonnet|cdk8s",
    "gitops": "Argo CD=ArgoCD|Flux=FluxCD",
    "infrastructure as code": "Terraform|Pulumi|CloudFormation|OpenTofu",
    "login method": "magic link=magic links|SMS code=SMS codes=code by SMS=codes by SMS=code via SMS=text message code=短信验证码|passkey=passkeys|one-time password=OTP|"
                    "password=passwords|密码登录|扫码登录",
}


#: Names that are also everyday English words ("spring tides", "a slow render", "the cursor",
#: "express delivery", "square meters"): they name the tool only as written, capitalized.
EVERYDAY_NAMES = frozenset(
    """Spring Render Cursor Echo Fiber Rocket Express Remix Astro Railway Flux Helm Zed Helix Gin Phoenix Jest Mocha
    Parcel Diesel Ember Pulsar Rollup Nomad Chakra Rails Oracle Snowflake Windows Teams Discord Telegram Slack Flask
    Square Huey Temporal Quartz Lark Paddle Bootstrap Drizzle Solr Tornado Rocket Linear Shortcut Basecamp Notion Sketch
    Coda Framer""".split())  # noqa: SIM905


@functools.lru_cache(maxsize=1)
def _tool_names() -> frozenset[str]:
    """Every spelling of every member, case-folded; everyday words ("Spring", "Phoenix") left
    out, since they name places and things as often as tools."""
    everyday = {n.casefold() for n in EVERYDAY_NAMES}
    return frozenset(name.replace("\\+", "+").casefold() for spec in VALUE_CLASSES.values()
                     for group in spec.split("|") for name in group.split("=")) - everyday


def is_tool_name(value: str) -> bool:
    """True when ``value`` is, as a whole, the name of a tool or service of
    :data:`VALUE_CLASSES` ("MySQL", "Kubernetes", "企业微信"), not an everyday word."""
    return value.strip().casefold() in _tool_names()


def names_a_tool(value: str) -> bool:
    """True when ``value`` as written names a tool: :func:`is_tool_name`, or an everyday word
    capitalized as the tool's name ("Slack", "Teams", "Notion" — "slack" is no tool). A place
    check must still come first: "Phoenix" is a city too."""
    return is_tool_name(value) or value.strip() in EVERYDAY_NAMES


#: A name stands alone among Latin letters and digits; next to a Chinese character it may be
#: written without a space ("用Redis", "统一企业微信"), so only ASCII word characters bound it.
NAME_LEFT = r"(?<![A-Za-z0-9_.#+-])"
NAME_RIGHT = r"(?![A-Za-z0-9_#+-]|\.[A-Za-z0-9_])"


@functools.lru_cache(maxsize=1)
def value_members() -> tuple[tuple[str, str, re.Pattern[str], tuple[str, ...] | None], ...]:
    """``(class, canonical, pattern, literals)`` of every member of :data:`VALUE_CLASSES`:
    ``literals`` are the case-folded names a match must contain (None when a name is a
    pattern, like ``Next.js``), a cheap test that skips the pattern for a text naming none of
    them. Read by the timeline's claims and by the offline extractor's accepted proposals."""
    out = []
    for cls, spec in VALUE_CLASSES.items():
        for group in spec.split("|"):
            names = group.split("=")
            canonical = names[0].replace("\\+", "+")
            alternation = "|".join(f"(?-i:{n})" if n in EVERYDAY_NAMES else n for n in sorted(names, key=len, reverse=True))
            flags = 0 if cls in ("programming language",) else re.I  # "go" / "Go", "swift"
            plain = [n.replace("\\+", "+") for n in names]
            literals = None if any(re.search(r"[.\\^$*?{}\[\]()|]", n) for n in plain) else tuple(n.casefold() for n in plain)
            out.append((cls, canonical, re.compile(rf"{NAME_LEFT}(?:{alternation}){NAME_RIGHT}", flags), literals))
    return tuple(out)
