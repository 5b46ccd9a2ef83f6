//! Requests read as the routes read them, from JSON to the job's settings ([`crate::read_request`]).

use crate::{read_request, ApiError, Asked, Endpoint};
use draftlab_core::decoding::settings::Settings;

fn param(body: &str, endpoint: Endpoint) -> Option<String> {
    read_request(&Settings::default(), endpoint, body.as_bytes()).err().map(|e| e.body.error.param.unwrap_or_default())
}

#[test]
fn requests_are_read_as_the_routes_read_them() {
    let ok = r#"{"model":"m","messages":[{"role":"user","content":"hi"}],"stop":["a","b"],"max_tokens":3}"#;
    let asked = read_request(&Settings::default(), Endpoint::Chat, ok.as_bytes()).unwrap();
    assert_eq!(asked.settings.n_predict, 3);
    let stops: Vec<String> = (0..17).map(|i| format!("\"s{i}\"")).collect();
    let many = format!(r#"{{"messages":[{{"role":"user","content":"hi"}}],"stop":[{}]}}"#, stops.join(","));
    assert_eq!(param(&many, Endpoint::Chat).as_deref(), Some("stop"));
    assert_eq!(
        param(r#"{"messages":[{"role":"robot","content":"x"}]}"#, Endpoint::Chat).as_deref(),
        Some("messages[0].role")
    );
    // A tool's result must name its call.
    assert_eq!(
        param(r#"{"messages":[{"role":"tool","content":"x"}]}"#, Endpoint::Chat).as_deref(),
        Some("messages[0].tool_call_id")
    );
    assert_eq!(param(r#"{"messages":[]}"#, Endpoint::Chat).as_deref(), Some("messages"));
    assert_eq!(param(r#"{"prompt":["a","b"]}"#, Endpoint::Completion).as_deref(), Some("prompt"));
    assert_eq!(param(r#"{"prompt":"a","temperature":9}"#, Endpoint::Completion).as_deref(), Some("temperature"));
    assert_eq!(param("not json", Endpoint::Chat).as_deref(), Some(""));
    // A reasoning model's switches.
    let think = |extra: &str| format!(r#"{{"messages":[{{"role":"user","content":"hi"}}],{extra}}}"#);
    assert_eq!(
        param(&think(r#""chat_template_kwargs":{"enable_thinking":"yes"}"#), Endpoint::Chat).as_deref(),
        Some("chat_template_kwargs.enable_thinking")
    );
    assert_eq!(param(&think(r#""reasoning_format":"xml""#), Endpoint::Chat).as_deref(), Some("reasoning_format"));
    let job = crate::routes::read_request(
        Endpoint::Chat,
        think(r#""chat_template_kwargs":{"enable_thinking":false},"reasoning_format":"none","draftlab":{"thinking_budget":9}"#)
            .as_bytes(),
    )
    .unwrap();
    assert_eq!(job.thinking, crate::jobs::Thinking { enable: Some(false), budget: Some(9), raw: true, hidden: false });
}

#[test]
fn log_probabilities_and_choices_are_read_in_each_endpoint_s_shape() {
    let chat = |extra: &str| {
        let b = format!(r#"{{"messages":[{{"role":"user","content":"hi"}}]{extra}}}"#);
        read_request(&Settings::default(), Endpoint::Chat, b.as_bytes())
    };
    let completion = |extra: &str| {
        let b = format!(r#"{{"prompt":"hi"{extra}}}"#);
        read_request(&Settings::default(), Endpoint::Completion, b.as_bytes())
    };
    let top = |r: Result<Asked, ApiError>| r.map(|a| a.settings.logprobs).map_err(|e| e.body.error.param);
    assert_eq!(top(chat("")), Ok(None));
    assert_eq!(top(chat(r#","logprobs":false"#)), Ok(None));
    assert_eq!(top(chat(r#","logprobs":true"#)), Ok(Some(0)));
    assert_eq!(top(chat(r#","logprobs":true,"top_logprobs":5"#)), Ok(Some(5)));
    assert_eq!(top(chat(r#","logprobs":true,"top_logprobs":21"#)), Err(Some("top_logprobs".into())));
    assert_eq!(top(chat(r#","top_logprobs":2"#)), Err(Some("top_logprobs".into())));
    assert_eq!(top(chat(r#","logprobs":3"#)), Err(Some("logprobs".into())));
    assert_eq!(top(completion(r#","logprobs":3"#)), Ok(Some(3)));
    assert_eq!(top(completion(r#","logprobs":true"#)), Err(Some("logprobs".into())));
    assert_eq!(top(completion(r#","logprobs":null"#)), Ok(None));
    let n = |extra: &str| chat(extra).map(|_| ()).map_err(|e| e.body.error.param);
    assert_eq!(n(r#","n":3"#), Ok(()));
    assert_eq!(n(r#","n":0"#), Err(Some("n".into())));
    assert_eq!(n(r#","n":9"#), Err(Some("n".into())));
    assert_eq!(n(r#","n":2,"stream":true"#), Ok(()));
}

#[test]
fn tools_and_tool_choice_are_checked_and_a_required_call_gets_a_grammar() {
    use draftlab_core::decoding::constraint::Constraint;
    let tool = r#"{"type":"function","function":{"name":"get_weather","parameters":{"type":"object","properties":{"city":{"type":"string"}}}}}"#;
    let body = |extra: &str| format!(r#"{{"messages":[{{"role":"user","content":"hi"}}],"tools":[{tool}]{extra}}}"#);
    let read = |b: String| read_request(&Settings::default(), Endpoint::Chat, b.as_bytes());
    let auto = read(body("")).unwrap();
    assert_eq!((auto.tool_calls.is_some(), auto.settings.constraint.is_none()), (true, true));
    let none = read(body(r#","tool_choice":"none""#)).unwrap();
    assert!(none.tool_calls.is_none());
    for choice in [r#""required""#, r#"{"type":"function","function":{"name":"get_weather"}}"#] {
        let asked = read(body(&format!(r#","tool_choice":{choice}"#))).unwrap();
        let Some(Constraint::Lark { grammar }) = asked.settings.constraint else { panic!("{choice}: no grammar") };
        assert!(grammar.contains("<tool_call>") && grammar.contains("get_weather"), "{grammar}");
    }
    let param = |b: String| read(b).err().and_then(|e| e.body.error.param);
    assert_eq!(param(body(r#","tool_choice":"sometimes""#)).as_deref(), Some("tool_choice"));
    assert_eq!(
        param(body(r#","tool_choice":{"type":"function","function":{"name":"nope"}}"#)).as_deref(),
        Some("tool_choice")
    );
    let bad_name =
        r#"{"messages":[{"role":"user","content":"hi"}],"tools":[{"type":"function","function":{"name":"a b"}}]}"#;
    assert_eq!(param(bad_name.into()).as_deref(), Some("tools[0].function.name"));
    let both = body(r#","tool_choice":"required","response_format":{"type":"json_object"}"#);
    assert_eq!(param(both).as_deref(), Some("response_format"));
    // An assistant turn's calls and a tool's result are read into the conversation.
    let turns = r#"{"messages":[{"role":"user","content":"hi"},{"role":"assistant","content":null,"tool_calls":[{"id":"c1","type":"function","function":{"name":"get_weather","arguments":"{\"city\":\"Oslo\"}"}}]},{"role":"tool","tool_call_id":"c1","content":"12 C"}]}"#;
    assert!(read(turns.into()).is_ok());
}

#[test]
fn response_format_becomes_the_runs_constraint() {
    use draftlab_core::decoding::constraint::Constraint;
    let constraint = |format: &str| {
        let body = format!(r#"{{"messages":[{{"role":"user","content":"hi"}}],"response_format":{format}}}"#);
        read_request(&Settings::default(), Endpoint::Chat, body.as_bytes()).map(|a| a.settings.constraint)
    };
    assert_eq!(constraint(r#"{"type":"text"}"#).unwrap(), None);
    assert_eq!(constraint(r#"{"type":"json_object"}"#).unwrap(), Some(Constraint::JsonObject));
    let schema = r#"{"type":"json_schema","json_schema":{"name":"n","strict":true,"schema":{"type":"integer"}}}"#;
    assert_eq!(constraint(schema).unwrap(), Some(Constraint::JsonSchema { schema: r#"{"type":"integer"}"#.into() }));
    // llama-server's spelling: a schema in json_object.
    let extension = r#"{"type":"json_object","schema":{"type":"string"}}"#;
    assert_eq!(constraint(extension).unwrap(), Some(Constraint::JsonSchema { schema: r#"{"type":"string"}"#.into() }));
    // A schema that is not one is refused before anything runs, naming the field.
    let bad = r#"{"type":"json_schema","json_schema":{"name":"n","schema":[1]}}"#;
    assert_eq!(constraint(bad).err().unwrap().body.error.param.as_deref(), Some("response_format"));
    assert!(constraint(r#"{"type":"xml"}"#).is_err());
}
