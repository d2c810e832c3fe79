import Benchmark
import Pushgate
import PushgateXML

// Template rendering and tag-expression evaluation: the per-device work of a fan-out.
// Run: scripts/bench.sh (or PUSHGATE_BENCHMARKS=1 swift package --scratch-path .build-bench benchmark)

let benchmarks: @Sendable () -> Void = {
    Benchmark.defaultConfiguration = .init(metrics: [.wallClock, .throughput, .mallocCountTotal], maxDuration: .seconds(2))

    let properties: TemplateProperties = ["user": "alice", "message": "Your order #4411 has shipped and will arrive on Tuesday."]
    let hostile: TemplateProperties = [
        "user": "bob", "message": String(repeating: #"<"quoted" & \escaped\ ]]> 😀 "#, count: 20),
    ]
    let apns = try! Template(json: #"{"aps":{"alert":"{'From ' + $(user) + ': ' + $(message)}"}}"#)
    let wns = try! Template(
        xmlText: #"<toast><visual><binding template="ToastText01">"#
            + #"<text id="1">{'From ' + $(user) + ': ' + $(message)}</text></binding></visual></toast>"#
    )
    let rich = try! Template(
        json: ##"{"aps":{"alert":{"title":".(title, 40)","body":"$(message, 200)"},"badge":"#(badge)","sound":"default"},"##
            + ##""url":"{'https://example.com/o?id=' + %(order)}","secureId":"$(secureId)"}"##
    )
    let richProperties: TemplateProperties = [
        "title": "A rather long title that will be clipped with an ellipsis", "message": "Body", "badge": "7",
        "order": "4411/a b", "secureId": "42",
    ]

    Benchmark("render APNs tutorial template") { benchmark in
        for _ in benchmark.scaledIterations { blackHole(try apns.render(properties)) }
    }
    Benchmark("render WNS toast template (XML)") { benchmark in
        for _ in benchmark.scaledIterations { blackHole(try wns.render(properties)) }
    }
    Benchmark("render APNs template, 1 KB hostile message") { benchmark in
        for _ in benchmark.scaledIterations { blackHole(try apns.render(hostile)) }
    }
    Benchmark("render rich JSON template (clip, ellipsis, number, percent)") { benchmark in
        for _ in benchmark.scaledIterations { blackHole(try rich.render(richProperties)) }
    }
    Benchmark("compile APNs tutorial template (parse once)") { benchmark in
        for _ in benchmark.scaledIterations {
            blackHole(try Template(json: #"{"aps":{"alert":"{'From ' + $(user) + ': ' + $(message)}"}}"#))
        }
    }

    let expressionText = "(follows_RedSox || follows_Cardinals) && location_Boston && !muted"
    let expression = try! TagExpression(parsing: expressionText)
    let orExpression = try! TagExpression(parsing: (1...20).map { "username:user\($0)" }.joined(separator: " || "))
    let registrationTags: Set<String> = Set(
        ["follows_Cardinals", "location_Boston", "username:user20", "lang:en"] + (0..<6).map { "topic:\($0)" })

    Benchmark("parse tag expression (4 tags, && || !)") { benchmark in
        for _ in benchmark.scaledIterations { blackHole(try TagExpression(parsing: expressionText)) }
    }
    Benchmark("evaluate tag expression against 10 tags") { benchmark in
        for _ in benchmark.scaledIterations { blackHole(expression.matches(registrationTags)) }
    }
    Benchmark("evaluate 20-tag OR expression against 10 tags") { benchmark in
        for _ in benchmark.scaledIterations { blackHole(orExpression.matches(registrationTags)) }
    }
}
