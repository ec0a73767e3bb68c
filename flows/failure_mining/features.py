"""Per-step features every detector reads, derived once from a steps frame with vectorised expressions.

Conventions the detectors rely on:
- rows are ordered by (trajectory_id, step_index) with each trajectory contiguous; `same_prev` /
  `same_next` say whether the neighbouring row belongs to the same trajectory, so a plain `shift` never
  leaks across trajectories;
- a step's `ui_tree_sha` / `screenshot_sha` describe the screen its action was taken on, so the effect of
  step i's action is the difference between step i's and step i+1's screen;
- `changed` is that effect, compared on the UI tree when both steps have one, else on the screenshot when
  both have one, else null. `unknown` is true when a next step exists but the two screens cannot be
  compared: missing data, counted as undecidable and never guessed. A trajectory's last step has no next
  screen: `changed` is null and `unknown` false (nothing is missing; the effect is just never observed);
- screens (`tree`, `shot`) and turns (`act_h`) are kept as 64-bit hashes: equality is all we need;
  `traj_no` numbers the trajectories of the frame and `row` the rows, so neighbour tests compare
  integers, not ids, and runs of steps never depend on how steps are numbered;
- `first_origin` is the scheme://host of the trajectory's first URL ("" when it has none);
- `url_changed` says the next step is on another URL (an observed effect; an unchanged URL proves nothing);
  `changed` counts a URL change as a change when the screens cannot be compared;
- `px` / `py` are the first action's point on the 0..999 grid (null without one), `px2` / `py2` where a drag
  ends, and `target_name` what the
  action names as its target (the target's name, label or text; for a coordinate click, the control the
  model's own output said it was clicking, e.g. `Let me click "Add to cart"`, `点击“删除”按钮`, `klicken Sie
  auf „Löschen“`: the quoted name next to the language's click verb), for side-effect recognition;
- `sens` is the step's sensitive kind (see side_effects: the manifest's, else recognised from the target's
  name and role, else from the command the turn runs, else from the URL it led to; null when the action failed), `sens_from` what said so and
  `sens_generic` that it rests on a name such as "Submit" alone (the detectors ask the instruction);
- `same_turn`: the step belongs to the previous step's turn, a turn that plans a repeat (see
  `_with_model_words`);
- `said_failed`: the step's own raw output says the previous action did not work ("still showing", "didn't
  open", "try again"; in English and in the nine other languages side_effects reads - Chinese simplified and
  traditional, Japanese, Korean, German, French, Spanish, Portuguese, Italian, Russian: "仍然没有反应",
  "funktioniert nicht", "не сработало"; CJK phrases as substrings, the others as whole words): the model's
  report of an effect it saw, evidence level `reasoning`;
  `said_worked`: it says the previous action did what it meant ("Now I have 2 protons", "has been added")
  and not that it failed, or it names new content ("COVEN AHRI appeared", "Now I can see August 12-21"),
  which also overrides a failure phrase in the same words (a stepping control "is still visible"); after a
  scroll repeated back to back, `said_failed` is only "the target is still not there" (`_SAID_NOT_THERE`);
- `idle`: the turn runs nothing and its words say the task is done (English only): a finished agent kept going,
  which neither repeats nor fails (mining-11);
- `ev_rank` is the strongest evidence the step's effect is known from, as its rank in EVIDENCE_LEVELS (a
  small integer, not a string per step): errors (the action failed), screenshot, ui_tree, url (the next
  step's URL differs), else actions.
- `failed`: the step reported an error and the page's URL did not move on after it (an error after which the
  URL changed - a harness timing out on the navigation a click caused - stopped nothing; mining-6);
  `aim_h` the hash of the action's name and target without its text (a re-sent answer, a re-typed field).
"""

from __future__ import annotations

import json
import re
from collections.abc import Callable

import polars as pl

from flows.failure_mining.side_effects import (
    CHOOSING_ROLES,
    LINK_ROLES,
    SIGN_IN_URL,
    SIGN_UP_URL,
    _pattern,
    command_kind,
    control_kind,
    effect_kind,
    enters_typed_text,
    for_role,
    generic_name,
    is_selector,
    opens_flow,
    presses_enter_alone,
    selector_phrases,
    typed_command_kind,
    typed_text_hash,
)

CLICKS = ("left_click", "double_click", "right_click", "middle_click", "triple_click", "tap")
SCROLLS = ("scroll", "hscroll")
# coordinate actions aimed at one control, compared by their points: clicks, and drags by both ends (a
# drag-select redone a few points off, a column edge dragged again: mining-8)
AIMED = (*CLICKS, "left_click_drag")
_FILLING = ("type", "select")  # filling in a form's fields
# The columns of the steps table the miner reads; nothing else is ever loaded.
STEP_COLUMNS = (
    "trajectory_id",
    "step_index",
    "screenshot_sha",
    "ui_tree_sha",
    "url",
    "actions_json",
    "format_error",
    "ok",
    "error",
    "points_json",
    "sensitive",
    "raw_output",
)
# Trajectory-level columns a caller may join onto the steps (see detectors.detect_premature).
OPTIONAL_COLUMNS = {
    "verdict": pl.String,
    "reference_len": pl.Int32,
    "instruction": pl.String,
    "sandbox": pl.String,
}
_TYPES = {"step_index": pl.Int32, "ok": pl.Boolean}
# The engine every query of the miner collects with. polars' default ("auto") picks the streaming engine
# here, whose results come in ~30 chunks per 1M rows; gathers and coalesces over chunked string columns
# then cost 30-100x what they cost on one chunk (1M bench steps: features 1.63 -> 0.88 CPU-s, a batch's
# mine_frame 4.3 -> 3.0), and the miner's frames fit in memory by construction (batches of whole files).
ENGINE = "in-memory"
_FIRST_ACTION = r'^\[\s*\{\s*"action"\s*:\s*"([A-Za-z_]+)"'
# An imported action our action space has no counterpart for (a tab switch, a wait, a slider): its actions
# JSON is empty, its format_error names it (flows.rollout.foreign_formats), so that names the turn.
_UNMAPPED = "unmapped_action:"
REVISIT_WINDOW = 4  # steps within which a turn issued again is one more pass at it (a cycle of up to 4 turns)
ORIGIN = r"^([A-Za-z][A-Za-z0-9+.-]*://[^/?#]+)"
HOST = r"^[A-Za-z][A-Za-z0-9+.-]*://([^/?#]+)"
_TARGET_ROLE = r'"target"\s*:\s*\{[^}]*?"role"\s*:\s*"([^"]{1,40})"'
# (a longer name - a describing harness's "upvote arrow button to the left of the first post titled ..." - gives
# its first 120 characters: the words that say what the control is come first)
_TARGET_NAME = r'"target"\s*:\s*\{[^}]*?"(?:name|label|text)"\s*:\s*"((?:[^"\\]|\\.){1,120})(?:[^"\\]|\\.)*"'
_TARGET_BODY = r'"target"\s*:\s*\{[^}]*\}'  # one target object of a turn (a turn of several has several)
_TARGET_ANY_NAME = r'"target"\s*:\s*\{[^}]*?"name"\s*:\s*"((?:[^"\\]|\\.)+)"'
# ... or the purpose it gave for the click: `click the cart icon to add this iPad to the bag`.
_SAID_PURPOSE = (
    r"(?i)\b(?:click|tap|press)\w*\b[^.\n]{0,80}?\bto (add\b[^.\n]{0,50}?\bto (?:the |my |your |a )?"
    r"(?:cart|bag|basket|trolley|wish ?list|favou?rites|order)\b)"
)
# ... or the change a button that names none (OK, Done, Confirm) makes, as the words give it right after the
# name: `点击“OK”按钮确认保存该模板`, `点击“Done”按钮，保存当前书签`, `click OK to save the settings` (Chinese and
# English; the verb's kind is side_effects.control_kind's: save a change, delete / remove a deletion).
# A press planned after another step ("选择后点击“OK”保存", "then click OK to save") is not this turn's.
_BLANK_BUTTON = r"(?:OK|Okay|Done|Confirm|Yes|确定|確定|确认|確認|完成|是)"
_BLANK_PURPOSE = (
    r"(?:点击|點擊|单击|單擊|click(?:ing)?|tap(?:ping)?|press(?:ing)?)\s?(?:on )?(?:the )?[“\"']?"
    + _BLANK_BUTTON
    + r"[”\"']?\s?(?:按钮|按鈕|button)?\s?[，,]?\s?(?:来|以|以便|从而|就能|to )?\s?(?:确认|確認|confirm )?"
    r"(保存|删除|刪除|save|delete|remove)"
)
_SAID_BLANK_PURPOSE = "(?i)" + _BLANK_PURPOSE
_LATER_BLANK_PURPOSE = r"(?i)(?:后|後|再|接着|then|after that|afterwards|finally)\s?" + _BLANK_PURPOSE
# The model saying its previous action did not work (English only): "still showing", "didn't", "try again";
# and the verdict words agents put on their own last step ("Failed - ...", "failure: the previous action
# failed", "was not successful", "did not succeed", "was not executed": mining-5, none of them in Claude's
# words on the ABP set, all of them in Browser-Use's, Notte's and proxy-lite's).
_SAID_NO_EFFECT = (
    r"(?i)\b(?:still (?:\w+ ){0,2}?(?:showing|there|visible|the same|not|on the|shows?|persists?|open|closed|"
    r"selected|displayed|present|loading)|didn'?t (?:\w+ )?(?:work|open|navigate|change|register|apply|respond|"
    r"seem|take|go through|load|expand|close|select|happen)|did not (?:\w+ )?(?:work|open|navigate|change|"
    r"register|apply|respond|take|load|expand|close|select|happen)|doesn'?t seem to|does not seem to|"
    r"failed|unsuccessful(?:ly)?|not successful(?:ly)?|^\s*failure|did(?: not|n'?t) (?:\w+ ){0,2}?succeed|"
    r"did(?: not|n'?t) (?:\w+ )?(?:lead|redirect|reveal|trigger|dismiss|proceed|advance|return)|"
    r"(?:was|were)(?: not|n'?t) (?:\w+ )?(?:executed|completed)|"
    r"isn'?t (?:working|responding|opening)|not (?:working|responding|navigating)|hasn'?t (?:changed|been|opened|"
    r"updated)|no (?:change|effect)|nothing (?:happened|changed)|(?:try|trying) (?:again|clicking)|"
    r"more precise(?:ly)?|more precision|keeps? (?:intercepting|hitting|expanding)|persists?|persistent|"
    r"accidentally|got selected instead)"
)
# ... and the same reports in the other languages side_effects reads (Chinese simplified and traditional,
# Japanese, Korean, German, French, Spanish, Portuguese, Italian, Russian): a failure or no response, no
# change, "still not", "try again", "did not open", "by accident" - each the language's own words for what
# the English list says, as plain phrases (side_effects._pattern: CJK as substrings, others whole words).
_FAILED_ELSEWHERE = (
    # Chinese: failed / not successful / no response / no change / not taken effect / still not / try again
    "失败", "失敗", "未成功", "没有成功", "没成功", "不成功", "沒有成功", "沒成功", "未能成功",
    "没有反应", "没反应", "无反应", "沒有反應", "沒反應", "無反應", "没有响应", "无响应", "沒有回應", "無回應",
    "没有变化", "没变化", "无变化", "沒有變化", "沒變化", "無變化", "没有改变", "沒有改變",
    "没有生效", "未生效", "没生效", "沒有生效", "沒生效",
    "仍未", "仍然没", "仍然未", "仍然不", "仍没", "依然没", "依然未", "依然不", "依旧没", "依旧未", "依舊沒",
    "还是没", "还是未", "還是沒", "仍然沒", "依然沒",
    "没有打开", "未打开", "没有展开", "未展开", "没有弹出", "未弹出", "没有出现", "未出现", "没有选中", "未选中",
    "沒有打開", "未打開", "沒有展開", "未展開", "沒有彈出", "未彈出", "沒有出現", "未出現", "沒有選中", "未選中",
    "再次尝试", "重新尝试", "重试", "再試一次", "重試", "不小心", "误点", "誤點",
    # clicked or chose the wrong one ("got selected instead"; 误点 above is "clicked by mistake")
    "点错", "點錯", "选错了", "選錯了",
    "没效果", "没有效果", "无效果", "沒效果", "沒有效果", "無效果", "没起作用", "没有起作用", "未起作用", "不起作用",
    "沒起作用", "沒有起作用", "未响应", "没响应", "未響應", "沒響應", "仍显示", "仍然显示", "依然显示", "还是显示",
    "仍顯示", "仍然顯示", "仍在加载", "还在加载", "仍在載入", "仍然存在", "依然存在", "仍存在",
    "还是有问题", "仍有问题", "依然有问题", "還是有問題",
    # Japanese
    "失敗", "反応がない", "反応しない", "反応しません", "反応がありません", "変化がない", "変化がありません",
    "変わらない", "変わらなかった", "変わっていない", "開かない", "開かなかった", "開いていない",
    "うまくいかない", "うまくいかなかった", "機能しない", "動作しない", "効果がない", "成功しなかった",
    "もう一度試", "再試行", "誤って",
    # Korean
    "실패", "반응이 없", "반응하지 않", "변화가 없", "변화 없", "바뀌지 않", "변하지 않", "열리지 않",
    "작동하지 않", "동작하지 않", "효과가 없", "성공하지 못", "다시 시도", "실수로",
    # German
    "fehlgeschlagen", "funktioniert nicht", "funktionierte nicht", "hat nicht funktioniert", "nicht erfolgreich",
    "erfolglos", "keine änderung", "keine wirkung", "keine reaktion", "nichts passiert", "nichts geändert",
    "nichts hat sich geändert", "immer noch nicht", "noch immer nicht", "weiterhin nicht", "reagiert nicht",
    "reagierte nicht", "öffnet sich nicht", "hat sich nicht geöffnet", "erneut versuchen", "noch einmal versuchen",
    "versehentlich",
    # French
    "échoué", "échec", "ne fonctionne pas", "n'a pas fonctionné", "ne marche pas", "n'a pas marché",
    "n'a pas réussi", "sans succès", "aucun changement", "aucun effet", "aucune réaction", "rien ne s'est passé",
    "rien n'a changé", "rien ne se passe", "toujours pas", "ne répond pas", "ne s'est pas ouvert",
    "ne s'ouvre pas", "réessayer", "essayer à nouveau", "essayer de nouveau", "par erreur", "accidentellement",
    # Spanish
    "falló", "ha fallado", "fallido", "no funcionó", "no ha funcionado", "no funciona", "sin éxito", "sin efecto",
    "ningún cambio", "ningún efecto", "nada cambió", "no pasó nada", "no ocurrió nada", "no sucedió nada",
    "todavía no", "sigue sin", "aún no", "no se abrió", "no responde", "no respondió", "no tuvo éxito",
    "intentar de nuevo", "intentarlo de nuevo", "intentar otra vez", "volver a intentar", "por error",
    "accidentalmente",
    # Portuguese
    "falhou", "não funcionou", "não funciona", "sem sucesso", "sem êxito", "sem efeito", "nenhuma mudança",
    "nenhuma alteração", "nenhum efeito", "nada mudou", "nada aconteceu", "ainda não", "continua sem",
    "não abriu", "não responde", "não respondeu", "tentar novamente", "tentar de novo", "por engano",
    "acidentalmente",
    # Italian
    "fallito", "non è riuscito", "non funziona", "non ha funzionato", "senza successo", "nessun cambiamento",
    "nessun effetto", "nessuna reazione", "nessuna modifica", "non è cambiato nulla", "non è successo nulla",
    "non è successo niente", "ancora non", "non si è aperto", "non si apre", "non risponde", "riprovare",
    "provare di nuovo", "per sbaglio", "accidentalmente",
    # Russian
    "не удалось", "не сработал", "не сработало", "не сработала", "не работает", "не получилось", "неудачно",
    "ничего не произошло", "ничего не изменилось", "ничего не случилось", "нет изменений", "нет реакции",
    "не открылся", "не открылось", "не открылась", "не реагирует", "не отреагировал", "не изменился",
    "не изменилось", "всё ещё не", "все еще не", "по-прежнему не", "попробовать снова", "попробовать ещё раз",
    "попробую снова", "попробую ещё раз", "повторить попытку", "случайно",
)
# (searched apart from the English pattern: joined to its `\b`s, the whole alternation ran 20x slower)
_SAID_NO_EFFECT_ELSEWHERE = _pattern(_FAILED_ELSEWHERE)
# The model reporting that its previous action did what it wanted (English only): "Now I have 2 protons",
# "it shows 2+", "has been added", a verdict that opens its words ("Success - ..."). Read only where the
# step's words do not also say it failed.
_SAID_WORKED = (
    r"(?i)(?:^|[.!\n]\s*)(?:good|great|perfect|excellent)\b|^\s*(?:success|successful|succeeded)\b|"
    r"\b(?:now (?:I have|it shows|it says|shows|says|"
    r"displays|has|there (?:is|are))|it (?:now )?shows \S|I'?ve (?:added|selected|set|increased|decreased|"
    r"moved|entered)|(?:has|have) been (?:added|selected|applied|set|updated|increased|entered|submitted|saved)|"
    r"is now (?:selected|set|checked|open|showing|applied|displayed|active)|(?:successfully|worked)\b)"
)
# ... and in the other languages: "successfully", "has been saved / applied / selected", "is now open", "it
# worked", "perfect" (the English list's words; a report of what was done, not a plan).
_WORKED_ELSEWHERE = (
    "已成功", "已经成功", "已經成功", "成功打开", "成功打開", "成功保存", "成功应用", "成功應用", "成功设置",
    "成功設置", "成功选中", "成功選中", "成功切换", "成功切換", "成功添加", "成功删除", "成功刪除",
    "已经打开", "已經打開", "已打开", "已打開", "已经展开", "已展开", "已經展開", "已经选中", "已選中", "已经選中",
    "已选中", "已经生效", "已生效", "已經生效", "已经保存", "已保存", "已經保存", "已经应用", "已应用", "已經應用",
    "成功しました", "うまくいきました", "正常に", "開きました", "表示されました", "選択されました",
    "適用されました", "保存されました", "追加されました",
    "성공했", "성공적으로", "열렸", "표시되었", "선택되었", "적용되었", "저장되었", "추가되었",
    "erfolgreich", "hat funktioniert", "funktioniert jetzt", "wurde hinzugefügt", "wurde ausgewählt",
    "wurde gespeichert", "wurde übernommen", "wurde angewendet", "wurde aktualisiert", "ist jetzt ausgewählt",
    "ist jetzt geöffnet", "ist jetzt aktiv",
    "avec succès", "a fonctionné", "fonctionne maintenant", "a été ajouté", "a été sélectionné",
    "a été enregistré", "a été appliqué", "a été mis à jour", "est maintenant sélectionné", "est maintenant ouvert",
    "con éxito", "exitosamente", "funcionó", "se ha añadido", "se ha agregado", "se ha seleccionado",
    "se ha guardado", "se ha aplicado", "se ha actualizado", "ahora está seleccionado", "ahora está abierto",
    "com sucesso", "com êxito", "funcionou", "foi adicionado", "foi selecionado", "foi salvo", "foi aplicado",
    "foi atualizado", "agora está selecionado", "agora está aberto",
    "con successo", "ha funzionato", "è stato aggiunto", "è stato selezionato", "è stato salvato",
    "è stato applicato", "è stato aggiornato", "ora è selezionato", "ora è aperto",
    "успешно", "получилось", "сработало", "был добавлен", "было добавлено", "был выбран", "было сохранено",
    "был сохранён", "был сохранен", "было применено", "было обновлено", "теперь открыт", "теперь выбран",
)
_SAID_WORKED_ELSEWHERE = _pattern(_WORKED_ELSEWHERE)
# New content named after a stepping control - a carousel's or a calendar's "next" - is progress, not a
# repeat that failed ("Now I can see August 12-21", "COVEN AHRI appeared", "I see Thank You and ...");
# not `I can see "Female infertility" is a link. Let me click directly on it` (a retry: ABP's misses).
_SAID_NEW = (
    r"(?i)\bappeared\b|\bI (?:can )?see (?:more|new|another)\b|\b(?:now )?I (?:can )?see (?-i:[A-Z0-9])"
)
# ... and in the other languages: something new appeared or more / new items are seen (not a bare "appeared":
# "an error appeared" is no progress).
_NEW_ELSEWHERE = (
    "出现了新", "出现新的", "出現了新", "出現新的", "显示了新", "顯示了新", "看到了新", "看到新的", "看到更多",
    "出现了更多", "出現了更多", "加载了更多", "加載了更多",
    "新しい項目", "新しい内容", "が現れました", "さらに表示",
    "새로운 항목", "나타났", "더 많은 항목",
    "ist erschienen", "sind erschienen", "erschien", "sehe jetzt mehr", "sehe neue", "sehe weitere",
    "est apparu", "est apparue", "sont apparus", "sont apparues", "je vois de nouveaux", "je vois de nouvelles",
    "apareció", "aparecieron", "han aparecido", "veo más", "veo nuevos", "veo nuevas",
    "apareceu", "apareceram", "vejo mais", "vejo novos", "vejo novas",
    "è apparso", "è apparsa", "sono apparsi", "sono apparse", "vedo altri", "vedo nuovi", "vedo nuove",
    "появился", "появилась", "появилось", "появились", "вижу новые", "вижу ещё", "вижу еще",
)
_SAID_NEW_ELSEWHERE = _pattern(_NEW_ELSEWHERE)
# After a scroll repeated back to back, the words saying what it looks for is still not there ("it was not
# found in the current view", "the slider remains hidden", "I still can't see the Save button"): that scroll
# did not get it nearer, as a click did not work (the labels' scroll search, mining-11). Read after such
# scrolls only: after a search or a click, "not found" is often what the page says ("No results found").
_SAID_NOT_THERE = (
    r"(?i)\b(?:(?:is|was|were|are|has|have|had)(?:n'?t| not)(?: yet)?(?: been)? (?:yet )?(?:visible|found|located|"
    r"seen|shown|displayed|appeared|in view)|not (?:yet )?(?:visible|found|located|seen|in view)|"
    r"remains? (?:hidden|unseen|invisible|out of view|not visible)|still (?:can(?:no|'|)t|could(?:n'?t| not)|"
    r"do(?:n'?t| not)) (?:see|find|locate)|no sign of|nowhere to be (?:seen|found))"
)
# ... and in the other languages: not found, not visible (yet), still cannot see, no trace of.
_NOT_THERE_ELSEWHERE = (
    "仍未找到", "还没有找到", "还没找到", "没有找到", "未找到", "沒有找到", "還沒找到", "仍然看不到", "还是看不到",
    "依然看不到", "仍然沒看到", "没有看到", "沒有看到",
    "見つかりません", "見当たりません", "まだ表示されません", "見つかりませんでした",
    "찾을 수 없", "찾지 못했", "보이지 않", "아직 보이지",
    "nicht gefunden", "noch nicht sichtbar", "nicht zu sehen", "immer noch nicht sichtbar",
    "pas trouvé", "introuvable", "toujours pas visible", "pas encore visible",
    "no encontrado", "no se encuentra", "todavía no aparece", "sigue sin aparecer", "aún no es visible",
    "não encontrado", "não encontrei", "ainda não aparece", "ainda não está visível",
    "non trovato", "non trovo", "ancora non visibile", "non è ancora visibile",
    "не найден", "не нашёл", "не нашел", "не видно", "всё ещё не видно", "все еще не видно",
)
_SAID_NOT_THERE_ELSEWHERE = _pattern(_NOT_THERE_ELSEWHERE)
# ... unless they name what the scroll brought into view: reading on, not searching in vain ("The page has
# scrolled down to reveal a section titled ...; the prices are still not visible").
_SAID_SCROLLED_ON = (
    r"(?i)\breveal(?:s|ed|ing)?\b|\bnew (?:section|content|items|results|options)\b|"
    r"\bmore (?:information|details|results|items|options|content|products|sections)\b|\bnow (?:shows|displays)\b"
)
# A turn that runs nothing while its words say the task is done ("Since the task has been completed, no further
# action is required"): an agent that has finished and is kept going by its harness, not one trying again
# (the labels leave such turns clean; `idle`, mining-11).
_SAID_DONE = (
    r"(?i)\b(?:task|goal|objective|request)(?: \w+){0,6} (?:has|had|have) (?:already )?(?:been )?(?:successfully )?"
    r"(?:completed|accomplished|achieved|fulfilled|done)\b|\bno (?:further|more|additional) (?:\w+ )?(?:actions?|steps?|"
    r"interactions?) (?:are |is )?(?:required|needed|necessary)\b|\b(?:task|goal) is (?:already )?(?:complete|completed|done)\b"
)
# The model reporting a state change it sees after an action ("The contact has been saved successfully", "the
# expense was successfully archived", "Successfully deleted"): an observed effect, as a URL only a change leads to
# is (mining-12). English only, and only the perfect passive or a "successfully" form of participles that name a
# change of the user's data: "was submitted by ..." or "the filter was removed" describe the page, "I created" or
# "let me save" is a recap or a plan. Words that deny it ("not yet successfully submitted") report nothing.
_EFFECT_PARTICIPLES = {
    "delete": r"deleted|uninstalled",
    "send": r"sent|posted|published",
    "book": r"booked|reserved",
    "pay": r"purchased|paid for",
    "cart": r"added to (?:the |your |my )?(?:shopping )?(?:cart|bag|basket|wish ?list)",
    "change": r"saved|created|archived|restored|installed|renamed",
}
_SAID_EFFECT = {
    kind: rf"(?i)\b(?:(?:has|have) (?:now )?been (?:successfully )?|(?:has|have) successfully |"
    rf"(?:was|were|is|are|got) (?:now )?successfully )(?:{words})\b|\b(?:was|were|is|are) (?:{words}) successfully\b"
    rf"|(?:^|[.!?:\"“'(]\s*)successfully (?:{words})\b"
    for kind, words in _EFFECT_PARTICIPLES.items()
}
_SAID_EFFECT_ANY = "|".join(f"(?:{p.removeprefix('(?i)')})" for p in _SAID_EFFECT.values())
# ... unless the sentence denies it or plans it: "not yet successfully submitted", "I need to ensure that the
# event is saved successfully", "verify they have been ordered"
_ALL_PARTICIPLES = "|".join(_EFFECT_PARTICIPLES.values())
_DENIED_EFFECT = (
    r"(?i)\b(?:not|n't|never|unable to|failed to|ensure|make sure|verify|whether|if|need to|needs to|should|will"
    rf"|must|until|once)\b[^.!?\n]{{0,80}}\b(?:{_ALL_PARTICIPLES})\b"
)


# A narrator's report of the control an action pressed, after it: "The 'Save' button was clicked", "Clicked on
# 'Restore'", "Clicked the blue 'Confirm' button" (English; the name quoted).
_QUOTED_NAME = r"""['"“‘]([^'"”’\n]{1,60})['"”’]"""
_SAID_CLICKED = (
    # the name the words call a button (or link, icon, option...), first: "The blue 'Save' button at the bottom
    # of the 'Add new track' form was clicked" pressed Save, not the form
    rf"(?i){_QUOTED_NAME} (?:\w+ )?(?:button|link|icon|option|tab|menu item|checkbox)\b[^.!?\n]{{0,80}}?\b(?:was|has been)"
    r" (?:successfully )?(?:clicked|tapped|pressed)\b",
    rf"(?i)\b(?:clicked|clicking|tapped|tapping|pressed|pressing) (?:on )?(?:the )?(?:\w+ ){{0,2}}?{_QUOTED_NAME}",
    rf"(?i){_QUOTED_NAME} (?:\w+ ){{0,2}}?(?:was|has been) (?:successfully )?(?:clicked|tapped|pressed)\b",
    # unquoted, as a narrator writes a name it read: "Clicked Save on the form", "Clicked on Delete"
    r"\b[Cc]licked (?:on )?(?:the )?(\p{Lu}[\p{L}-]*(?: \p{Lu}[\p{L}-]*){0,3})\b",
    # "The Save button was found after scrolling, clicked", "the heart icon (Add to Wishlist) was clicked",
    # "Clicked on the button that confirms the sort ('Save New Order')", "The task to click on the 'Delete'
    # option ... is complete"
    r"\b[Tt]he (\p{Lu}[\p{L}-]*(?: \p{Lu}[\p{L}-]*){0,3}) (?:button|link|icon|option) (?:was|has been) "
    r"(?:(?:found|located|seen|shown)\b[^.!?\n,]{0,30}, )?(?:successfully )?(?:clicked|tapped|pressed)\b",
    r"(?i)\b(?:button|icon|link|option)\b[^.!?\n(]{0,60}?\(['\"“‘]?([^)'\"”’\n]{1,40}?)['\"”’]?\)[^.!?\n]{0,20}?\b(?:was|has been)"
    r" (?:successfully )?(?:clicked|tapped|pressed)\b",
    r"(?i)\bclicked (?:on )?the (?:button|icon|link|option)\b[^.!?\n(]{0,60}?\(['\"“‘]?([^)'\"”’\n]{1,40}?)['\"”’]?\)",
    rf"(?i)\btask (?:was )?to (?:\w+ ){{0,6}}?(?:click|tap|press) (?:on )?(?:the )?(?:\w+ ){{0,2}}?{_QUOTED_NAME}"
    r"[^.!?\n]{0,80}?\b(?:is|was) (?:now )?(?:complete|completed|done)\b",
)


# ... and that it was a link: "the 'Book' link", "'Book' in the breadcrumb"
_SAID_LINK = rf"(?i){_QUOTED_NAME} (?:\w+ )?link\b|\blink (?:named |labell?ed )?{_QUOTED_NAME}|\bbreadcrumb"
# ... and that what it pressed opened something (a dialog, a form, a page): it committed nothing yet ("Clicked on the
# 'Delete' link ..., which led to the expected delete confirmation page", "The 'Create event' button was clicked and
# its dropdown menu is now open")
_OPENED_THING = r"(?:dialog|dropdown|menu|modal|pop-?up|form|page|prompt|screen|wizard)"
_SAID_OPENED = (
    rf"(?i)\b{_OPENED_THING}\b[^.]{{0,40}}\b(?:opened|appeared|is (?:now )?open|showed up|was shown|is shown)\b"
    rf"|\b(?:opened|opens|opening) (?:the |a |an |its )?(?:\w+ ){{0,3}}{_OPENED_THING}\b"
    rf"|\b(?:led|leading|leads) to (?:the |a |an )?(?:expected )?(?:\w+ ){{0,3}}{_OPENED_THING}\b"
)


def said_clicked_name(text: pl.Expr) -> pl.Expr:
    """The quoted name of the control the words say was clicked (null when they say none, or say it opened a
    dialog, a form or a page: `_SAID_OPENED`)."""
    name = pl.coalesce(*(text.str.extract(p, 1) for p in _SAID_CLICKED))
    return pl.when(~text.str.contains(_SAID_OPENED)).then(name)


def said_clicked_role(text: pl.Expr) -> pl.Expr:
    """"link" when the words call what was clicked a link ("Clicked on 'Book' link in breadcrumb navigation"):
    a link named Book navigates (side_effects.for_role); null otherwise."""
    return pl.when(text.str.contains(_SAID_LINK)).then(pl.lit(LINK_ROLES[0]))


def said_effect_kind(text: pl.Expr) -> pl.Expr:
    """The sensitive kind of the change the words report (null when they report none; the first kind wins)."""
    out = pl.lit(None, pl.String)
    for kind, pattern in reversed(list(_SAID_EFFECT.items())):
        out = pl.when(text.str.contains(pattern)).then(pl.lit(kind)).otherwise(out)
    return pl.when(text.str.contains("(?i)" + _SAID_EFFECT_ANY) & ~text.str.contains(_DENIED_EFFECT)).then(out)


# The model planning a repeat within one turn: "Let me click the plus button 4 times".
# ... or the taps, clicks, presses, swipes or scrolls still to make: "I need 5 more taps to reach 7", "4-5 more
# swipes" (mining-9; the action words only: "a few more attempts" is a retry, not a plan)
_SAID_TIMES = (
    r"(?i)\b(?:\d+(?:-\d+)?|two|three|four|five|six|seven|eight|nine|ten|several|a few) (?:more )?(?:times\b|"
    r"(?:taps|clicks|presses|swipes|scrolls)\b)"
)
# ... or, in English, named bare in the words' last sentence: a capitalised name right after the verb ("Now
# tapping Submit.", "let's press Submit (scaled coordinates)."); no article, so not "click the delete icon",
# and no sentence after it ("... and click Subscribe. Let me click on the email field" clicks the field)
# (mining-10: a phone agent's words name the button it taps by pixels so).
_SAID_BARE_TARGET = (
    r"(?:^|[\s,.;:!])(?i:click|tap|press|hit)(?i:[pt]?ing|s)?\s+(?:(?i:on)\s+)?"
    r"([A-Z][A-Za-z0-9&+'-]*(?: [A-Z][A-Za-z0-9&+'-]*){0,2})[^.!?\n]*[.!?]*\s*(?:\n|\z)"
)
# In a model's own words, the control it is about to click: `click on the "Save" button`, `tap 'Send'`.
_SAID_TARGET = (
    r"""(?i)(?:click|tap|press|select|hit)(?:ing|s)?\s+(?:on\s+)?(?:the\s+)?["'“‘]([^"'”’\n]{1,60})["'”’]"""
)
# ... and in the other languages, the quoted or bracketed name next to the language's click verb. Chinese
# puts the verb first, a few words of place between (`点击右上角绿色的“Save”按钮`, `按「確定」`), and writes an
# English control's name unquoted too (`点击Save按钮`, `点击OK，`); Japanese and Korean put the name first
# (`「保存」ボタンをクリック`, `"저장" 버튼을 클릭`); German, French, Spanish, Portuguese, Italian and Russian put the
# verb first (`klicken Sie auf „Speichern“`, `cliquer sur « OK »`, `hacer clic en "Guardar"`, `нажать кнопку
# «Сохранить»`), German also last (`auf „Speichern“ klicken`). One pattern per word order, each with one group.
_CJK_QUOTED = r"""["“「『【‘']\s?([^"”」』】’'\n]{1,60}?)\s?["”」』】’']"""
_QUOTED = r"""["“„«‹]\s?([^"“”„«»‹›\n]{1,60}?)\s?["”“»›]"""
_ZH_CLICK = r"(?:点击|點擊|单击|單擊|双击|雙擊|点选|點選|按下|选择|選擇|勾选|勾選|选中|選中)"
_ZH_BETWEEN = r"""[^。！？，,、；;:：\n"“”「」『』【】‘’']{0,20}?"""
_LATIN_NAME = r"([A-Za-z][A-Za-z0-9&+'-]*(?: [A-Za-z0-9][A-Za-z0-9&+'-]*){0,3})"
_CONTROL_NOUN = r"(?:按钮|按鈕|选项|選項|图标|圖標|链接|連結|键|鍵)"
_JA_KO_CLICK = (
    r"\s?(?:ボタン|リンク|メニュー|タブ|アイコン|オプション|버튼|링크|메뉴|탭|아이콘|옵션)?\s?(?:を|に|을|를|에)?\s?"
    r"(?:クリック|押|タップ|選択|클릭|누르|눌러|선택)"
)
_VERB_END = "[a-zà-öø-ÿа-яё]*"  # a verb's ending: a small class (with Unicode \\w the search ran 5x slower)
_LATIN_CLICK_STEMS = (
    "klick", "anklick", "drück", "auswähl", "wähl", "cliqu", "appuy", "sélectionn", "clica", "clique", "clicc",
    "pulsa", "presion", "oprim", "seleccion", "selecion", "pression", "selezion",
    "нажм", "нажа", "нажим", "кликн", "щёлкн", "щелкн", "выбер", "выбра",
)
_LATIN_CLICK = (
    r"(?i)(?:^|[^\p{L}\p{N}])(?:"
    + "|".join(stem + _VERB_END for stem in _LATIN_CLICK_STEMS)
    + r"|clic|clicar|prem(?:i|ere|endo|iamo|ete))(?:$|[^\p{L}\p{N}])"  # whole words: "clic" is not "click"
)
# where a sentence ends (the said target in the other languages is the first named in the last such sentence)
_SENTENCE_END = r"[。！？!?\n]|\.\s"
# A sentence that opens with a later step plans what comes after this turn's click ("然后点击“Save”按钮",
# "完成选择后，才能点击“Save”", "之后再点击OK", "Dann auf „Speichern“ klicken"): the control it names is
# not the one clicked now. The sequencing words of each language that says "then" / "after that" /
# "finally" / "once ... is done"; "next" (接下来, 下一步, als Nächstes) names this turn's step and is not one.
_LATER_STEP_OPENING = (
    r"(?i)^\s*(?:然后|之后|随后|接着|再|最后(?:[^一]|一[^步])|完成[^，,。]{0,15}?[后後]|[^，,。]{0,15}?之[后後]|"
    r"その後|それから|最後に|그 ?다음|그 ?후|마지막으로|"
    r"then\b|after that\b|afterwards\b|finally\b|once\b|"
    r"dann\b|danach\b|anschließend\b|ensuite\b|puis\b|après\b|luego\b|después\b|depois\b|"
    r"poi\b|dopo\b|затем\b|потом\b|после\b)"
)
# The words calling the named control a button ("点击“Save”按钮", "the 'Create' button", "「保存」ボタン"): a
# button named Save or Create commits what it names, where the same words as a plan ("save the location")
# or a menu item ("File > Save As" opens a dialog) do not.
_BUTTON_AFTER = r"""["'”’」』】»›]?\s?(?:的)?\s?(?:按钮|按鈕|ボタン|버튼|button\b|btn\b)"""
_BUTTON_BEFORE = r"""(?:schaltfläche|knopf|bouton|botón|botão|pulsante|кнопк[уаи]?)\s?["'“‘„«‹]?\s?"""
# A drag the words say moves something into a folder ("将文件拖拽至“Miscellaneous”文件夹", "drag the photo into
# the presenter folder", "「写真」フォルダにドラッグ"): a file moved, which is a change (a drag inside a document,
# a slider's or a selection's, names no folder). Verb and folder in either order, in one sentence.
_DRAG_VERB = (
    r"(?:拖|移动|移到|移至|移入|放入|放到|drag|move|drop|zieh|verschieb|gliss|déplac|arrastr|mov|trascin|spost|"
    r"перетащ|перемест|ドラッグ|移動|드래그|이동)"
)
_FOLDER_NOUN = (
    r"(?:文件夹|目录|資料夾|目錄|folder|directory|ordner|verzeichnis|dossier|répertoire|carpeta|directorio|pasta|"
    r"cartella|папк|フォルダ|폴더)"
)
_SAID_MOVED_INTO_FOLDER = rf"(?i){_DRAG_VERB}[^。！？!?\n]{{0,40}}?{_FOLDER_NOUN}|{_FOLDER_NOUN}[^。！？!?\n]{{0,30}}?{_DRAG_VERB}"
DRAGS = ("left_click_drag",)
_SAID_TARGET_ELSEWHERE = (
    _ZH_CLICK + _ZH_BETWEEN + _CJK_QUOTED,
    r"按\s?" + _CJK_QUOTED,  # 按 alone is also "according to" (按照) and part of "button" (按钮): quoted only
    # (no "after" or another verb between: "点击选中该图标后按Delete键" clicks the icon)
    r"(?:点击|點擊|单击|單擊|双击|雙擊|点选|點選)[^。！？，,、；;:：\n\"“”「」『』【】‘’'A-Za-z后後按]{0,12}?"
    + _LATIN_NAME + r"\s?(?:" + _CONTROL_NOUN + r"|[，。,；;]|$)",
    _CJK_QUOTED + _JA_KO_CLICK,
    # the control named first, then clicked as "it" ("右下角有“Save”按钮，点击它保存设置", "“Install”按钮，点击这个按钮")
    _CJK_QUOTED + r"\s?" + _CONTROL_NOUN + r"\s?[，,]?\s?(?:点击|點擊|单击|單擊)(?:它|这个|這個|该|該|此)",
    _LATIN_CLICK + r"""[^.!?;:\n"“”„«»‹›]{0,40}?""" + _QUOTED,
    _QUOTED + r"""[^.!?;\n"“”„«»‹›]{0,25}?(?i:klicken|anklicken|drücken|auswählen|wählen)(?:$|[^\p{L}\p{N}])""",
)


# The control named without quotes (agents that read an accessibility tree write names as they read them):
# `Clicking on the Add to bag button`, `the link with element_id [250] labeled Add all DLC to Cart`, `a button
# with the label Add To Cart`. English: the name between the click verb and a control noun, or after a word
# that says the control is labelled so next to that noun; the name's first words count (control_kind reads
# a kind from a name's opening), so where the name ends matters little. The other languages: the label
# words after a control noun ("le bouton intitulé Supprimer", "die Schaltfläche mit der Aufschrift Löschen",
# "кнопку с надписью Удалить") or the control noun followed by the name ("le bouton Ajouter au panier", "el
# botón Eliminar", "кнопку Удалить"); Chinese, Japanese and Korean the name next to their "labelled" words
# ("名为“保存”的按钮" is quoted and read above; "名为保存的按钮", "削除というボタン", "삭제라는 버튼"). Names of at
# most six words, the last such name in the words wins.
_UNQUOTED_NAME = r"([\p{L}\p{N}][\p{L}\p{N}'&+-]*(?:\s+[\p{L}\p{N}'&+-]+){0,5}?)"
_UNQUOTED_LABEL = r"([\p{L}\p{N}][\p{L}\p{N}'&+-]*(?:\s+[\p{L}\p{N}'&+-]+){0,5})"  # up to where the words end
_NOT_NAMES = ["the", "a", "an", "this", "that", "its", "it", "each", "any"]  # "click on the link with element_id"
_CONTROL_NOUNS = r"(?:button|link|icon|option|tab|input|menu item|element|checkbox|control)"
_LABEL_WORDS = (
    r"(?:labell?ed|with the (?:label|text|title|caption)|named|titled|that (?:says|reads)|which (?:says|reads)|"
    r"saying|reading)"
)
_SAID_UNQUOTED = (
    r"(?i)\b(?:click|tap|press|hit)(?:ing|ed|s)?\s+(?:on\s+)?(?:the\s+)?"
    + _UNQUOTED_NAME + r"\s+" + _CONTROL_NOUNS + r"\b",
    r"(?i)\b" + _CONTROL_NOUNS + r"\b[^.\n]{0,60}?\b" + _LABEL_WORDS + r"\s+(?:as\s+)?" + _UNQUOTED_LABEL
    + r"(?:[\s.,;:!?)]|$)",
)
_NOUNS_ELSEWHERE = (
    r"(?:schaltfläche|knopf|bouton|botón|botão|pulsante|кнопк[аиуе]?|lien|enlace|collegamento|ссылк[аиуе]?)"
)
_LABELLED_ELSEWHERE = (
    r"(?:beschriftet mit|mit der (?:beschriftung|aufschrift)|mit dem text|namens|intitulée?|libellée?|nommée?|"
    r"avec le texte|etiquetad[oa]|con la etiqueta|con el texto|llamad[oa]|que dice|rotulad[oa]|com o rótulo|"
    r"com o texto|chamad[oa]|que diz|etichettat[oa]|con l'etichetta|con il testo|chiamat[oa]|denominat[oa]|"
    r"che dice|с надписью|с текстом|под названием|с меткой)"
)
_SAID_UNQUOTED_ELSEWHERE = (
    r"(?i)" + _NOUNS_ELSEWHERE + r"\s+(?:[\p{L}-]+\s+){0,2}?" + _LABELLED_ELSEWHERE + r"\s+" + _UNQUOTED_LABEL
    + r"(?:[\s.,;:!?)]|$)",
    r"(?i)" + _NOUNS_ELSEWHERE + r"\s+(?-i:(\p{Lu}[\p{L}'-]*(?:\s+[\p{L}'-]+){0,4}))(?:[\s.,;:!?)]|$)",
    r"(?:名为|名叫|标有|写着|标注为|显示为)\s?([^\s，。,、；;“”\"的]{1,20})\s?的?" + _CONTROL_NOUN,
    r"([^\s、。，「」『』]{1,20}?)\s?(?:という|と書かれた|と表示された)(?:ボタン|リンク)",
    r"([^\s,.]{1,20}?)\s?(?:이라는|라는|이라고 (?:표시된|적힌)|라고 (?:표시된|적힌))\s?(?:버튼|링크)",
)


# The evidence a finding rests on, weakest first; a finding records the strongest one that decided it.
EVIDENCE_LEVELS = ("actions", "reasoning", "url", "ui_tree", "screenshot", "errors", "manifest")


def _rank(level: str) -> pl.Expr:
    return pl.lit(EVIDENCE_LEVELS.index(level), dtype=pl.Int8)


def prev(expr: pl.Expr, n: int = 1) -> pl.Expr:
    """The value n steps earlier in the same trajectory; null across a trajectory boundary."""
    t = pl.col("traj_no")
    return pl.when(t.shift(n) == t).then(expr.shift(n))


def nxt(expr: pl.Expr, n: int = 1) -> pl.Expr:
    """The value n steps later in the same trajectory; null across a trajectory boundary."""
    t = pl.col("traj_no")
    return pl.when(t.shift(-n) == t).then(expr.shift(-n))


def contains_action(name: str) -> pl.Expr:
    """Whether any action of the turn is `name` (a turn may carry a batch of actions); the JSON is only
    searched for turns of several actions, the rest answer from `action_name`."""
    return (
        pl.when(pl.col("several"))
        .then(pl.col("act").str.contains(rf'"action"\s*:\s*"{name}"'))
        .otherwise((pl.col("action_name") == name).fill_null(False))
    )


def _differs_next(col: str) -> pl.Expr:
    """True/False when this step's and the next step's value are both known; null otherwise."""
    c = pl.col(col)
    return pl.when(pl.col("same_next") & c.is_not_null() & c.shift(-1).is_not_null()).then(c != c.shift(-1))


def with_missing_columns(frame: pl.DataFrame) -> pl.DataFrame:
    """Hand-built or imported frames may leave optional columns out or all-null; give them the lake's types."""
    wanted = {c: _TYPES.get(c, pl.String) for c in STEP_COLUMNS} | OPTIONAL_COLUMNS
    fixes = [
        pl.lit(None, dtype=t).alias(c) if c not in frame.columns else pl.col(c).cast(t)
        for c, t in wanted.items()
        if c not in frame.columns or frame.schema[c] != t
    ]
    return frame.with_columns(fixes) if fixes else frame


def in_trajectory_order(frame: pl.DataFrame) -> pl.DataFrame:
    """Each trajectory contiguous and in step order; skips the sort when the writer already did that."""
    tid = frame["trajectory_id"].hash()
    boundaries = (tid != tid.shift(1)).fill_null(True)
    steps_rise = ((frame["step_index"] > frame["step_index"].shift(1)) | boundaries).all()
    if steps_rise and int(boundaries.sum()) == tid.filter(boundaries).n_unique():  # every id opens a run
        return frame
    return frame.sort("trajectory_id", "step_index")


def _per_action(acts: pl.LazyFrame) -> pl.LazyFrame:
    """What every detector reads from a turn's actions JSON, computed once per distinct JSON (turns repeat
    across millions of steps: the regular expressions are the costly part), keyed by its hash `act_h`."""
    return (
        acts.with_columns(
            px=pl.col("act").str.extract(r'"x"\s*:\s*(\d+)', 1).cast(pl.Int32, strict=False),
            py=pl.col("act").str.extract(r'"y"\s*:\s*(\d+)', 1).cast(pl.Int32, strict=False),
            # where a drag ends (null for every other action): a drag is re-aimed at both ends
            px2=pl.col("act").str.extract(r'"x2"\s*:\s*(\d+)', 1).cast(pl.Int32, strict=False),
            py2=pl.col("act").str.extract(r'"y2"\s*:\s*(\d+)', 1).cast(pl.Int32, strict=False),
            # categorical: detectors test it against lists of names on every step (17x cheaper than strings)
            action_name=pl.col("act").str.extract(_FIRST_ACTION, 1).cast(pl.Categorical),
            targetless=~pl.col("act").str.contains('"target"', literal=True),
            target_name=pl.col("act").str.extract(_TARGET_NAME, 1),
            several=pl.col("act").str.contains("}, {", literal=True) | pl.col("act").str.contains("},{", literal=True),
            # what the turn aims at, whatever its text: the action's name and its target (an answer, a fill of
            # one field); null for a coordinate action (detectors compare its points)
            # (hashed inside the `then`: a hash of the null would give every coordinate action one aim)
            aim_h=pl.when(~pl.col("act").str.contains(r'"x"\s*:')).then(
                pl.concat_str(
                    pl.col("act").str.extract(_FIRST_ACTION, 1),
                    pl.col("act").str.extract(r'"target"\s*:\s*(\{[^}]*\})', 1).fill_null(""),
                ).hash()
            ),
        )
        .with_columns(
            has_call_user=contains_action("call_user"),
            has_terminate=contains_action("terminate"),
            _target_role=pl.col("act").str.extract(_TARGET_ROLE, 1),
            # the target's whole name when it is a CSS selector, an XPath or a resource id (any length: a
            # selector is often longer than target_name's bound; side_effects.selector_phrase reads its end)
            _target_selector=pl.col("act").str.extract(_TARGET_ANY_NAME, 1),
            _command_kind=command_kind(pl.col("act")),
            _typed_kind=typed_command_kind(pl.col("act")),
            _enter_alone=presses_enter_alone(pl.col("act")),
            _enters_typed=enters_typed_text(pl.col("act")),
            _typed_h=typed_text_hash(pl.col("act")),
        )
        .with_columns(
            _target_selector=pl.when(is_selector(pl.col("_target_selector"))).then("_target_selector"),
            act_json=pl.when("several").then("act"),  # read by _later_targets (several actions: few turns)
        )
        .drop("act")
    )


def _json_unescaped(values: pl.Series) -> pl.Series:
    """Strings cut out of JSON text, with their escapes decoded (`\\u4fdd\\u5b58` is 保存, `\\"` a quote): writers
    that escape every non-ASCII character (Python's json.dumps) would otherwise hide every name in another
    script from the control words. Only the values holding a backslash are decoded, each distinct one once."""
    escaped = values.str.contains("\\", literal=True).fill_null(False)
    if not escaped.any():
        return values
    at = escaped.arg_true()

    def decoded(text: str) -> str:
        try:
            out = json.loads(f'"{text}"')
        except ValueError:  # a cut-off escape at the end of a bounded name: keep it as it was
            return text
        return out if isinstance(out, str) else text

    some = values.gather(at)
    table = pl.DataFrame({"v": some.unique()}).with_columns(d=pl.col("v").map_elements(decoded, return_dtype=pl.String))
    return values.scatter(at, some.replace_strict(table["v"], table["d"]))


def _with_target_kinds(per_action: pl.DataFrame) -> pl.DataFrame:
    """`_target_kind` / `_target_generic`: what the target's name says (side_effects.control_kind with its
    role), a selector-named target's by the words of its ids and classes (side_effects.selector_phrase:
    `#addtobagID` reads "add to bag"); `_selector` that the target is named by a selector (its name is no
    control's name: the model's words may name the control, see `_with_model_words`)."""
    per_action = per_action.with_columns(
        target_name=_json_unescaped(per_action["target_name"]), _target_role=_json_unescaped(per_action["_target_role"])
    )
    phrase = selector_phrases(per_action["_target_selector"])
    selector = per_action["_target_selector"].is_not_null()
    name = pl.when(pl.lit(selector)).then(pl.lit(phrase)).otherwise(pl.col("target_name"))
    out = per_action.with_columns(
        _target_kind=control_kind(name, pl.col("_target_role")),
        _target_generic=generic_name(name),
        _selector=selector,
    ).drop("_target_selector")
    return _later_targets(out)


def _later_targets(per_action: pl.DataFrame) -> pl.DataFrame:
    """A turn of several actions on named targets (a Maestro flow's `tapOn: "Pro"` then `tapOn: "Submit"`, a
    tool call per field then the button) whose first target names no kind takes the kind of the first later
    target that names one, with its genericness (the first target's name stays `target_name`: the loop
    detectors compare it). Such turns are few: only theirs are read (mining-10)."""
    rows = (
        per_action["several"] & per_action["_target_kind"].is_null() & ~per_action["_selector"]
    ).arg_true()
    if rows.is_empty():
        return per_action.drop("act_json")
    targets = (
        per_action[rows]
        .select(pl.int_range(pl.len()).alias("_r"), pl.col("act_json").str.extract_all(_TARGET_BODY).alias("t"))
        .explode("t")
        .drop_nulls("t")
        .with_columns(
            n=pl.col("t").str.extract(_TARGET_NAME, 1), role=pl.col("t").str.extract(_TARGET_ROLE, 1)
        )
    )
    targets = (
        targets.with_columns(n=_json_unescaped(targets["n"]), role=_json_unescaped(targets["role"]))
        .with_columns(k=control_kind(pl.col("n"), pl.col("role")), g=generic_name(pl.col("n")))
        .drop_nulls("k")
        .group_by("_r", maintain_order=True)
        .agg(pl.col("k").first(), pl.col("g").first())
    )
    if targets.is_empty():
        return per_action.drop("act_json")
    at = rows.gather(targets["_r"])
    kind = per_action["_target_kind"].scatter(at, targets["k"])
    generic = per_action["_target_generic"].scatter(at, targets["g"])
    return per_action.with_columns(_target_kind=kind, _target_generic=generic).drop("act_json")


def step_features(steps: pl.LazyFrame | pl.DataFrame) -> pl.DataFrame:
    """Order once and derive the columns every detector shares, so no detector parses JSON twice."""
    frame = steps.collect(engine=ENGINE) if isinstance(steps, pl.LazyFrame) else steps
    frame = in_trajectory_order(with_missing_columns(frame))
    tid = pl.col("trajectory_id").hash()  # 64-bit: two adjacent trajectories never collide in practice
    lf = frame.lazy().with_row_index("row").with_columns(same_prev=(tid.shift(1) == tid).fill_null(False))
    lf = lf.with_columns(
        traj_no=(~pl.col("same_prev")).cast(pl.UInt32).cum_sum(),
        same_next=pl.col("same_prev").shift(-1).fill_null(False),
        act=pl.col("actions_json").fill_null("[]"),
        tree=pl.when(pl.col("ui_tree_sha").is_not_null()).then(pl.col("ui_tree_sha").hash()),
        shot=pl.when(pl.col("screenshot_sha").is_not_null()).then(pl.col("screenshot_sha").hash()),
        unmapped=pl.col("format_error").str.starts_with(_UNMAPPED).fill_null(False),
    ).with_columns(act_h=pl.when(pl.col("unmapped")).then(pl.col("format_error")).otherwise("act").hash())
    base = lf.collect(engine=ENGINE)
    per_action = _with_target_kinds(
        _per_action(base.lazy().select("act_h", "act").unique("act_h")).collect(engine=ENGINE)
    )
    # commands typed into a terminal: only their turns' columns are spread onto the steps, when there are any
    typing = ("_typed_kind", "_enter_alone", "_enters_typed", "_typed_h")
    typed = (per_action["_typed_kind"].is_not_null() | (per_action["_command_kind"].is_not_null() & per_action["_enters_typed"])).any()
    if not typed:
        per_action = per_action.drop(typing)
    at = base["act_h"].replace_strict(  # each step's row in per_action: a hash lookup, then plain gathers
        per_action["act_h"], pl.int_range(per_action.height, eager=True, dtype=pl.UInt32), return_dtype=pl.UInt32
    )
    lf = base.with_columns(**{c: per_action[c].gather(at) for c in per_action.columns if c != "act_h"}).lazy()
    if typed:
        lf = lf.with_columns(
            # an Enter pressed alone runs the command the turn before typed and did not enter (mining-14)
            _command_kind=pl.coalesce(
                "_command_kind", pl.when(pl.col("_enter_alone")).then(prev(pl.col("_typed_kind")))
            ),
            # which command a step runs (its turn's, or the typed one its Enter runs), to tell a retry
            _command_h=pl.when(pl.col("_command_kind").is_not_null() & pl.col("_enters_typed"))
            .then("_typed_h")
            .when(pl.col("_enter_alone") & prev(pl.col("_typed_kind")).is_not_null())
            .then(prev(pl.col("_typed_h"))),
        ).drop(typing)
    lf = (
        lf.with_columns(
            url_changed=pl.when(
                pl.col("same_next") & pl.col("url").is_not_null() & pl.col("url").shift(-1).is_not_null()
            ).then(pl.col("url") != pl.col("url").shift(-1)),
            tree_changed=_differs_next("tree"),
            shot_changed=_differs_next("shot"),
        )
        .with_columns(
            # an error after which the page's URL moved on did not stop the action: the harness gave up
            # waiting on the navigation it caused (Playwright's "Timeout 500ms exceeded" on a link)
            failed=pl.col("ok").not_().fill_null(False) & ~pl.col("url_changed").fill_null(False),
            is_repeat=pl.col("same_prev")
            & (pl.col("act_h") == pl.col("act_h").shift(1))
            & ((pl.col("act") != "[]") | pl.col("unmapped")),
            changed=pl.coalesce(
                "tree_changed", "shot_changed", pl.when(pl.col("url_changed").fill_null(False)).then(True)
            ),
            unknown=pl.col("same_next")
            & pl.col("tree_changed").is_null()
            & pl.col("shot_changed").is_null()
            & ~pl.col("url_changed").fill_null(False),
        )
        .with_columns(
            ev_rank=pl.when(pl.col("failed"))
            .then(_rank("errors"))
            .when(pl.col("shot_changed").is_not_null())
            .then(_rank("screenshot"))
            .when(pl.col("tree_changed").is_not_null())
            .then(_rank("ui_tree"))
            .when(pl.col("url_changed").fill_null(False))
            .then(_rank("url"))
            .otherwise(_rank("actions")),
        )
    )
    out = _with_model_words(lf.drop("ui_tree_sha", "screenshot_sha", "actions_json").collect(engine=ENGINE))
    out = _first_runs_of_commands(out).with_columns(**_said_after(out["raw_output"]))
    return _with_sensitive(out.drop("raw_output").with_columns(first_origin=_first_origin(out)))


def _first_runs_of_commands(features: pl.DataFrame) -> pl.DataFrame:
    """A command typed into a terminal again word for word in the same trajectory, after an entry that did not
    fail, names no side effect of its own: an agent re-entering `pkill soffice` or `sudo apt install x` turn
    after turn is retrying what did not take (its words say so), and an entry that did take is the first one
    (mining-14). Shell actions and tool calls are not typed: a harness runs each (`clearState` clears again),
    and the save chord is no command text (a second Ctrl+S after new edits saves them)."""
    if "_command_h" not in features.columns:  # no command typed into a terminal in these steps
        return features
    h = features["_command_h"]
    rows = (h.is_not_null() & ~features["failed"]).arg_true()
    if rows.len() < 2:
        return features.drop("_command_h")
    runs = pl.DataFrame({"t": features["traj_no"].gather(rows), "h": h.gather(rows)})
    again = rows.filter(~runs.select(pl.struct("t", "h").is_first_distinct()).to_series())
    if again.is_empty():
        return features.drop("_command_h")
    kind = features["_command_kind"].clone().scatter(again, None)
    return features.with_columns(_command_kind=kind).drop("_command_h")


# words every report of an effect or of a pressed control holds (`_SAID_EFFECT`, `_SAID_CLICKED`): searched first,
# in one pass, so the patterns run on the few outputs that may match (as one case-blind regular expression: polars'
# case-blind Aho-Corasick `contains_any` took 2-3x as long, on 1M bench outputs and on the real sets' alike)
_AFTER_MARKERS = ("success", " been ", "clicked", "clicking", "tapped", "pressed")
_AFTER_MARKER = "(?i)" + "|".join(re.escape(marker) for marker in _AFTER_MARKERS)


def _said_after(raw: pl.Series) -> dict[str, pl.Series]:
    """What the words of each step say about the action before them: `_said_effect` (the change they report),
    `_said_clicked` (the control they say was pressed), and `_wordless`, that the step has no words of its own
    (no output, or one line: the action itself, as harnesses log a turn with no thought)."""
    n = raw.len()

    def nothing() -> pl.Series:  # a new one each: scatter writes in place
        return pl.repeat(None, n, dtype=pl.String, eager=True)

    maybe = raw.str.contains(_AFTER_MARKER).fill_null(False)
    if not maybe.any():
        return {
            "_said_effect": nothing(),
            "_said_clicked": nothing(),
            "_said_role": nothing(),
            "_wordless": pl.repeat(True, n, eager=True),
        }
    at = maybe.arg_true()
    some = raw.gather(at)
    return {
        "_said_effect": nothing().scatter(at, _per_value(some, said_effect_kind)),
        "_said_clicked": nothing().scatter(at, _per_value(some, said_clicked_name)),
        "_said_role": nothing().scatter(at, _per_value(some, said_clicked_role)),
        "_wordless": ~raw.str.contains("\n", literal=True).fill_null(False),
    }


def recurs() -> pl.Expr:
    """The turn recurs within REVISIT_WINDOW steps of this one, before or after, in the same trajectory (a
    repeat, or one pass of a cycle of 2-4 turns: tick the box, press Verify, tick the box...); scrolls and
    empty turns never do (scrolling on is reading, see detectors.SCROLL_FACTOR: "the results still show all
    breeds" while scrolling is about the page)."""
    h, t = pl.col("act_h"), pl.col("traj_no")
    # the turn k steps back is this one; k steps ahead is the same comparison made k rows later
    back = {k: (h == h.shift(k)) & (t == t.shift(k)) for k in range(1, REVISIT_WINDOW + 1)}
    again = pl.any_horizontal([e for k, b in back.items() for e in (b, b.shift(-k))]).fill_null(False)
    acted = (pl.col("act") != "[]") | pl.col("unmapped")
    return again & acted & ~pl.col("action_name").is_in(SCROLLS).fill_null(False)


def _with_model_words(features: pl.DataFrame) -> pl.DataFrame:
    """`said_failed`, `said_worked`, `same_turn`, and `target_name` for coordinate clicks from
    the model's words (with `_named_kind`, the sensitive kind of the final target name). Only the rows that
    can use them are searched - coordinate clicks, turns that recur within a few steps (`recurs`: a click by
    element, a typing, a tab switch: the loop detectors read what the next turn says of each) and the steps
    right after one - since raw outputs are the longest text of a step, and each distinct text once (a
    policy's outputs repeat).

    `same_turn`: the step's words are the previous step's, word for word but for their last line (the
    action: ABP's harness logs a turn's thought on each of its actions), and name a count ("Let me click the
    plus button 4 times"): one turn that plans its repeats, not new attempts. Words repeated without a count
    are not enough for that: on the ABP set three labelled loops are re-clicks whose thought the model
    repeated word for word ("Let me click the X button on the cookie banner more precisely" twice)."""
    click = pl.col("targetless") & pl.col("action_name").is_in(CLICKS)
    # a click on a target named by a selector (side_effects.selector_phrase): the words may name the control
    # it is; read for its kind only (its target_name and the loop detectors' signals stay as they were)
    selected = (pl.col("_selector") & pl.col("action_name").is_in(CLICKS)).fill_null(False)
    aimed = pl.col("targetless") & pl.col("action_name").is_in(AIMED)  # a drag re-aimed is read as a click
    drag = pl.col("action_name").is_in(DRAGS)
    # a scroll repeated back to back, and the one it repeats: the words after each say whether it found
    # what it scrolls for (scrolls never `recur`: scrolling on is reading)
    scroll_again = pl.col("is_repeat") & pl.col("action_name").is_in(SCROLLS)
    searching = (scroll_again | scroll_again.shift(-1)).fill_null(False)
    read = (aimed | drag | recurs() | searching).fill_null(False) & pl.col("raw_output").is_not_null()
    # (`read` taken first: in one select with its three uses below, its recurrence tests ran three times)
    flags = features.select(
        "same_prev", "raw_output", read=read, click=click, drag=drag, selected=selected, searching=searching
    )
    read, click, drag = pl.col("read"), pl.col("click"), pl.col("drag")
    after = (pl.col("same_prev") & read.shift(1)).fill_null(False) & pl.col("raw_output").is_not_null()
    after_scroll = (pl.col("same_prev") & pl.col("searching").shift(1)).fill_null(False)
    selected = pl.col("selected") & pl.col("raw_output").is_not_null()
    wanted = flags.select(
        click=(click & read).fill_null(False),
        drag=(drag & read).fill_null(False),
        selected=selected,
        signals=read | after,
        rows=read | after | selected,
        after_scroll=after_scroll & after,
    )
    rows = wanted["rows"].arg_true()
    picked = features.select("raw_output").gather(rows).with_columns(
        h=pl.col("raw_output").hash(),
        **{c: wanted[c].gather(rows) for c in ("click", "drag", "selected", "signals", "after_scroll")},
    )
    texts = picked.select("h", "raw_output").unique("h")
    # the texts of selector-named targets' clicks, whose unquoted names are read (few: searched apart)
    to_name = picked.filter("selected").select("h", "raw_output").unique("h")
    picked = picked.drop("raw_output")
    raw = pl.col("raw_output")
    # English: the last control named (the thought ends with the click it makes); the other languages: the
    # first control named in the last sentence that names one ("下一步点击“None”，之后点击“OK”确认": the
    # click made is the first, what comes "after" is the next step's)
    # (each pattern searched on its own: one alternation of them all ran 6x slower)
    sentences = raw.str.replace_all(_SENTENCE_END, "\x00").str.split("\x00")
    in_sentence = pl.coalesce(*(pl.element().str.extract(p, 1) for p in _SAID_TARGET_ELSEWHERE))
    quoted = (
        raw.str.extract_all(_SAID_TARGET).list.last().str.extract(_SAID_TARGET, 1),
        sentences.list.eval(pl.when(~pl.element().str.contains(_LATER_STEP_OPENING)).then(in_sentence))
        .list.drop_nulls()
        .list.last(),
    )
    unquoted = to_name.select(
        "h",
        # the click verb, the name, a control noun (not a bare "the": "click on the link with ..."), else the
        # name a label word gives, else the other languages' unquoted names
        unquoted=pl.coalesce(
            raw.str.extract_all(_SAID_UNQUOTED[0]).list.last().str.extract(_SAID_UNQUOTED[0], 1).replace(_NOT_NAMES, None),
            raw.str.extract_all(_SAID_UNQUOTED[1]).list.last().str.extract(_SAID_UNQUOTED[1], 1),
            *(raw.str.extract_all(p).list.last().str.extract(p, 1) for p in _SAID_UNQUOTED_ELSEWHERE),
        ),
    )

    def kinds(frame: pl.DataFrame, name: str) -> pl.DataFrame:  # what a name the words give says
        escaped = pl.col(name).str.escape_regex()
        kind, generic, purpose = pl.col(f"{name}_kind"), pl.col(f"{name}_generic"), pl.col("_blank_purpose")
        # a name that says no change (OK, Done) with the change it makes said right after it: that change's
        blank_purposed = purpose.is_not_null() & (kind.is_null() | generic)
        return (
            frame.with_columns(
                **{
                    f"{name}_kind": control_kind(pl.col(name)),
                    f"{name}_generic": generic_name(pl.col(name)),
                    f"{name}_opens": opens_flow(pl.col(name)),
                }
            )
            .with_columns(
                # the words call a Save / Create a button (searched where the kind is "change" only: one pattern
                # a row)
                **{
                    f"{name}_button": pl.when(kind == "change")
                    .then(
                        raw.str.contains(
                            pl.format(
                                "(?i)(?:{}{}|{}{})", escaped, pl.lit(_BUTTON_AFTER), pl.lit(_BUTTON_BEFORE), escaped
                            )
                        )
                    )
                    .fill_null(False)
                }
            )
            .with_columns(
                **{
                    f"{name}_kind": pl.when(blank_purposed).then(control_kind(purpose)).otherwise(kind),
                    f"{name}_button": pl.col(f"{name}_button") | blank_purposed.fill_null(False),
                    f"{name}_generic": generic & ~blank_purposed.fill_null(False),
                }
            )
        )

    said = texts.select(
        "h",
        "raw_output",
        failed=raw.str.contains(_SAID_NO_EFFECT) | raw.str.contains(_SAID_NO_EFFECT_ELSEWHERE),
        not_there=(raw.str.contains(_SAID_NOT_THERE) | raw.str.contains(_SAID_NOT_THERE_ELSEWHERE))
        & ~raw.str.contains(_SAID_SCROLLED_ON),
        worked=raw.str.contains(_SAID_WORKED) | raw.str.contains(_SAID_WORKED_ELSEWHERE),
        done=raw.str.contains(_SAID_DONE),
        new=raw.str.contains(_SAID_NEW) | raw.str.contains(_SAID_NEW_ELSEWHERE),
        planned=raw.str.contains("\n", literal=True) & raw.str.contains(_SAID_TIMES),
        alone=~raw.str.contains("\n", literal=True),
        words=raw.str.replace(r"\n[^\n]*\z", "").hash(),
        _quoted=pl.coalesce(*quoted),
        _purpose=raw.str.extract(_SAID_PURPOSE, 1),
        _blank_purpose=pl.when(~raw.str.contains(_LATER_BLANK_PURPOSE)).then(raw.str.extract(_SAID_BLANK_PURPOSE, 1)),
        _bare=raw.str.extract(_SAID_BARE_TARGET, 1),
        moved=raw.str.contains(_SAID_MOVED_INTO_FOLDER),
    )
    # the name a coordinate click's target is given (its target_name, which the loop detectors compare, and
    # its kind): the quoted one or the purpose; a selector-named target's: the quoted, the unquoted, the purpose
    said = kinds(said.with_columns(shown=pl.coalesce("_quoted", "_purpose", "_bare")), "shown")
    if unquoted.is_empty():  # no selector-named click: the two readings are one
        said = said.with_columns(
            named=pl.col("shown"),
            **{f"named_{c}": pl.col(f"shown_{c}") for c in ("kind", "generic", "button", "opens")},
        )
    else:
        said = kinds(
            said.join(unquoted, on="h", how="left", maintain_order="left").with_columns(
                named=pl.coalesce("_quoted", "unquoted", "_purpose")
            ),
            "named",
        ).drop("unquoted")
    said = said.drop("raw_output", "_quoted", "_purpose", "_bare", "_blank_purpose")
    # a coordinate click's control is the name its words quote (`shown`); a selector-named target's also the
    # name they give unquoted (`named`: an agent reading a tree writes names as it reads them; on coordinate
    # logs unquoted names found no side effect the quoted ones missed and added a false one, `the delete icon`
    # of an editor's text box)
    sel, clk = pl.col("selected"), pl.col("click")
    said = picked.join(said, on="h", how="left", maintain_order="left").with_columns(
        said_name=pl.when(sel).then(pl.col("named").is_not_null()),
        named=pl.when(clk).then("shown"),
        kind=pl.when(clk)
        .then("shown_kind")
        .when(sel)
        .then(pl.when(~pl.col("named_opens")).then("named_kind"))  # "Buy Now" opens checkout (FLOW_OPENERS)
        .when(pl.col("drag") & pl.col("moved"))
        .then(pl.lit("change")),
        generic=pl.when(clk).then("shown_generic").when(sel).then("named_generic"),
        # a Save / Create button, or a file dragged into a folder: a change the words alone show
        commits=(clk & pl.col("shown_button")) | (sel & pl.col("named_button")) | (pl.col("drag") & pl.col("moved")),
        **{c: pl.col(c) & pl.col("signals") for c in ("worked", "new", "planned", "done")},
        failed=pl.col("signals")
        & pl.when("after_scroll").then(pl.col("not_there") & ~pl.col("worked")).otherwise("failed"),
        words=pl.when("signals").then("words"),
    )
    n = features.height

    def spread(col: str, dtype: pl.DataType = pl.Boolean, default=False) -> pl.Series:
        return pl.repeat(default, n, dtype=dtype, eager=True).scatter(rows, said[col])

    failed, worked, new = (spread(c).fill_null(False) for c in ("failed", "worked", "new"))
    failed = failed & ~new  # "The right arrow is still visible" after new items appeared: progress
    words = spread("words", pl.UInt64, None)
    same_words = (features["same_prev"] & (words == words.shift(1))).fill_null(False)
    planned = spread("planned").fill_null(False)
    # the repeats after a turn that planned them ("I need 5 more taps"), each with no words of its own (one
    # line: the call alone, as a transcript logs every tool call of a turn) or the same words, none saying it
    # failed, carry that plan out: one turn, not new attempts (mining-9)
    repeat = features["is_repeat"].fill_null(False)
    # (each run of repeats carries the plan of the turn that opens it: a forward fill, not a window over the
    # runs - over ~1M runs that cost 0.4-0.5 CPU-s per 1M steps)
    plan = pl.DataFrame({"repeat": repeat, "p": planned}).select(
        pl.when(~pl.col("repeat")).then(pl.col("p")).forward_fill().fill_null(False)
    )
    carried = repeat & plan.to_series() & (spread("alone").fill_null(False) | same_words) & ~failed
    out = features.with_columns(
        same_turn=(same_words & planned) | carried,
        said_failed=failed,
        said_worked=(worked & ~failed) | new,
        idle=spread("done").fill_null(False) & (pl.col("act") == "[]"),
    )
    if said["named"].null_count() == said.height and said["kind"].null_count() == said.height:
        # the words name no control and no move: the targets' kinds stand
        # (a target's kind and genericness are null / false where it has no name, as for no words)
        return out.rename({"_target_kind": "_named_kind", "_target_generic": "_named_generic"}).drop(
            "_selector", "_target_role"
        )
    # a target's own name says its kind; a selector's words too, unless the model's words name the control
    words_name_it = spread("said_name").fill_null(False)
    named_target = (pl.col("target_name").is_not_null() & ~pl.col("_selector")) | (
        pl.col("_selector") & ~words_name_it
    )
    words_kind = for_role(spread("kind", pl.String, None), pl.col("_target_role"))
    return out.with_columns(
        _named_kind=pl.when(named_target)
        .then(pl.col("_target_kind"))
        # the model's plan names what it saves or creates in the same words ("save the location", "create
        # the report") as often as the control: from its words alone, those (side_effects "change") do not count
        # ... unless they call it a button (or the turn drags a file into a folder)
        .otherwise(
            pl.when(spread("commits").fill_null(False)).then(words_kind).otherwise(words_kind.replace("change", None))
        ),
        _named_generic=pl.when(named_target)
        .then(pl.col("_target_generic"))
        .otherwise(spread("generic").fill_null(False)),
        target_name=pl.coalesce(pl.col("target_name"), spread("named", pl.String, None)),
    ).drop("_target_kind", "_target_generic", "_selector", "_target_role")


def _per_value(values: pl.Series, kind: Callable[[pl.Expr], pl.Expr]) -> pl.Series:
    """`kind` of each value, computed once per distinct value (URLs repeat across millions of steps; the
    regular expressions behind `kind` are the costly part); only values with a kind are looked up."""
    table = pl.DataFrame({"v": values.drop_nulls().unique()}).with_columns(k=kind(pl.col("v"))).drop_nulls("k")
    if table.is_empty():
        return pl.repeat(None, values.len(), dtype=pl.String, eager=True).alias(values.name)
    return values.replace_strict(table["v"], table["k"], default=None, return_dtype=pl.String)


# Steps that only look (a screen capture, a wait): the words after them are about the action before them
_LOOKING = ("screenshot", "wait")
# actions whose effect the next words may report: presses of a control or a key (typing fills, a goto opens)
_COMMITTING = (*CLICKS, "key", "left_click_drag")


def _onto_acted(features: pl.DataFrame, said: pl.Series, also: pl.Series | None = None) -> pl.Series:
    """What the words of a step say (`said`, null where they say nothing) put on the step they follow: the last
    step before them that is no screen capture or wait (an agent that looks by calling a tool logs tap, wait,
    screenshot, then its words), in the same trajectory, when that step presses a control or a key and `also`
    holds there. Null elsewhere."""
    if said.null_count() == said.len():
        return said
    acting = ~features["action_name"].cast(pl.String).is_in(_LOOKING).fill_null(False)
    row = pl.Series(range(features.height), dtype=pl.Int64)
    last_acting = row.zip_with(acting, pl.Series([None] * features.height, dtype=pl.Int64)).forward_fill().shift(1)
    words_at = said.is_not_null().arg_true()
    target = last_acting.gather(words_at)
    ok = target.is_not_null()
    words_at, target = words_at.filter(ok), target.filter(ok).cast(pl.UInt32)
    traj = features["traj_no"]
    presses = features["action_name"].cast(pl.String).is_in(_COMMITTING).fill_null(False)
    keep = (traj.gather(words_at) == traj.gather(target)) & presses.gather(target)
    if also is not None:
        keep = keep & also.gather(target)
    out = pl.repeat(None, features.height, dtype=said.dtype, eager=True)
    if keep.any():
        out = out.scatter(target.filter(keep), said.gather(words_at.filter(keep)))
    return out


def _reported_effects(features: pl.DataFrame) -> pl.Series:
    """Per step, the kind of change the model's next words report it made (`said_effect_kind`), on the step the
    words follow (`_onto_acted`) - the first report only: words that repeat the step before's report ("The fork
    has been created" on and on) recap it - and where nothing before it in the run was named a change: an agent
    that restates its progress ("The group has been created and I'm on its overview page") reports a change its
    named Create made steps ago."""
    said = features["_said_effect"]
    if said.null_count() == said.len():
        return said
    named = (pl.col("_named_kind").is_not_null() | pl.col("_command_kind").is_not_null()).cast(pl.Int32)
    named_before = features.select(n=named.cum_sum().over("traj_no") - named)["n"] > 0
    return _onto_acted(features, said, said.is_null() & ~named_before)


def _named_after(features: pl.DataFrame) -> pl.DataFrame:
    """`_named_kind` / `_named_generic` of a wordless press whose target names no kind, from the next words that
    say which control it was ("The blue 'Save' button was clicked", "Clicked on 'Restore'": a harness that
    narrates each action after it, with no words before it; mining-12). Other steps keep theirs."""
    pressed = features["_wordless"] & features["_named_kind"].is_null()
    name = _onto_acted(features, features["_said_clicked"], pressed)
    if name.null_count() == name.len():
        return features.with_columns(_named_after=pl.lit(False))
    # the words call it a link ("Clicked on 'Book' link in breadcrumb"): a link named Book navigates (mining-14)
    role = _onto_acted(features, features["_said_role"], pressed)
    return features.with_columns(
        _named_after=pl.col("_named_kind").is_null() & pl.lit(name).is_not_null(),
        _named_kind=pl.coalesce(pl.col("_named_kind"), control_kind(pl.lit(name), pl.lit(role))),
        _named_generic=pl.when(pl.lit(name).is_not_null())
        .then(generic_name(pl.lit(name)))
        .otherwise(pl.col("_named_generic")),
    )


def _with_sensitive(features: pl.DataFrame) -> pl.DataFrame:
    """`sens` and `sens_from` (see the module docstring; `sens_from` is null where `sens` is). Which source
    names the step's kind is decided on every step with booleans; the kinds themselves (strings) are put
    together on the few steps that have one."""
    features = _named_after(features)
    kinds = _per_value(features["url"], effect_kind)
    reported = _reported_effects(features)  # the model's next words report the change (mining-12)
    kinds_next = pl.coalesce(pl.lit(kinds).shift(-1), pl.lit(reported))
    observed = pl.coalesce(nxt(pl.lit(kinds)), pl.lit(reported))
    by_url = nxt(pl.lit(kinds)).is_not_null()
    generic = pl.col("_named_generic") & observed.is_null()  # a URL that shows the effect says more
    # the page stayed (or no URL says it moved: an app, a desktop) and the next step typed into it, with no
    # typing just before: the control opened a form (Invite members, Create contact, a Save As dialog's
    # name field...) or the site rejected the submit; either way nothing was committed yet (mining-11: the
    # URL-less sets' openers: side effects ABP P 0.80 -> 0.84, AndroidWorld 0.71 -> 1.0, gbox 0.63 -> 0.65;
    # OSWorld P 0.763 -> 0.770, R 0.632 -> 0.629)
    filling = pl.col("action_name").is_in(_FILLING)
    stayed = ~pl.col("url_changed").fill_null(False)
    opened_form = (stayed & nxt(filling) & ~prev(filling).fill_null(False)).fill_null(False)
    # the site asked to sign in (or to solve a CAPTCHA) next: nothing was committed yet
    urls = features["url"].drop_nulls().unique()
    sign_in = features["url"].is_in(urls.filter(urls.str.contains(SIGN_IN_URL)).implode()).fill_null(False)
    opened_form = opened_form | (nxt(pl.lit(sign_in)) & ~pl.lit(sign_in)).fill_null(False)
    # a press on a sign-up form's page right after typing into it sends the form (not a choice in it: a gender
    # combobox, a checkbox); the roles are read on those few steps only
    sign_up_urls = urls.filter(urls.str.contains(SIGN_UP_URL))
    if sign_up_urls.is_empty():
        signs_up = pl.lit(False)
    else:
        sign_up = features["url"].is_in(sign_up_urls.implode()).fill_null(False)
        choosing = pl.col("act").str.contains(rf'"role"\s*:\s*"(?:{"|".join(CHOOSING_ROLES)})"')
        pressed = pl.col("action_name").is_in(CLICKS) & prev(filling) & ~pl.col("failed")
        signs_up = (pl.lit(sign_up) & pressed.fill_null(False)).fill_null(False)
        signs_up = signs_up & ~pl.when(signs_up).then(choosing).fill_null(False)
    # a timeout is the harness giving up waiting, not proof the click was not made (Playwright's "Timeout
    # 500ms exceeded" on most submits that reload the page): it does not clear a side effect
    error = pl.col("error")  # literal searches: a regular expression here cost 0.07 CPU-s per 500k steps
    timed_out = (error.str.contains("imeout", literal=True) | error.str.contains("imed out", literal=True)).fill_null(False)
    flags = features.select(
        manifest=pl.col("sensitive").is_not_null(),
        named=~opened_form & (~pl.col("_named_generic") | generic) & pl.col("_named_kind").is_not_null(),
        command=pl.col("_command_kind").is_not_null(),
        signs_up=signs_up,
        observed=observed.is_not_null(),
        by_url=by_url,
        generic=generic,
        done=~pl.col("failed") | timed_out,
    )
    rows = flags.select(
        pl.col("done") & (pl.col("manifest") | pl.col("named") | pl.col("command") | pl.col("observed") | pl.col("signs_up"))
    ).to_series().arg_true()
    here = pl.DataFrame(
        {
            "sensitive": features["sensitive"].gather(rows),
            "kind": features["_named_kind"].gather(rows),
            "command_kind": features["_command_kind"].gather(rows),
            "next_kind": features.select(kinds_next).to_series().gather(rows),
            **{c: flags[c].gather(rows) for c in ("manifest", "named", "command", "observed", "by_url", "signs_up")},
            "named_after": features["_named_after"].gather(rows),
        }
    ).select(
        # a command or the save chord names its effect itself: no form to open, no generic word to ask about
        sens=pl.coalesce(
            "sensitive",
            pl.when("named").then("kind"),
            "command_kind",
            pl.when("observed").then("next_kind"),
            pl.when("signs_up").then(pl.lit("account")),
        ),
        sens_from=pl.when("manifest")
        .then(pl.lit("manifest"))
        .when(pl.col("named") & pl.col("named_after"))  # named by the narration after it: the words
        .then(pl.lit("reasoning"))
        .when(pl.col("named") | pl.col("command"))
        .then(pl.lit("actions"))
        .when(pl.col("by_url") | (pl.col("signs_up") & ~pl.col("observed")))
        .then(pl.lit("url"))
        .otherwise(pl.lit("reasoning")),
    )

    def spread(values: pl.Series) -> pl.Series:  # scatter works in place: a new series each
        nulls = pl.repeat(None, features.height, dtype=pl.String, eager=True)
        return nulls.scatter(rows, values) if rows.len() else nulls

    return features.with_columns(  # categorical: detectors compare kinds with names on every step
        sens=spread(here["sens"]).cast(pl.Categorical),
        sens_from=spread(here["sens_from"]).cast(pl.Categorical),
        # the kind rests on a name that says only that a form is sent (side_effects.GENERIC_WORDS)
        sens_generic=~flags["manifest"] & flags["named"] & flags["generic"],
    ).drop(
        "_named_kind", "_named_generic", "_command_kind", "_said_effect", "_said_clicked", "_said_role", "_wordless",
        "_named_after",
    )


def _first_origin(features: pl.DataFrame) -> pl.Series:
    """Each step's trajectory's first URL origin (scheme://host), "" when that URL is missing: extracted at
    the trajectory starts only, then carried forward."""
    starts = features["same_prev"].not_().arg_true()
    origins = features["url"].gather(starts).str.extract(ORIGIN, 1).fill_null("")
    return origins.gather(features["traj_no"] - 1)  # traj_no numbers the starts from 1, in row order


def attach_trajectories(features: pl.DataFrame, trajectories: pl.DataFrame) -> pl.DataFrame:
    """Keep the steps of `trajectories` only and give every step its trajectory's `verdict` and
    `reference_len`, by trajectory number (a gather, not a join over the steps)."""
    firsts = features.select("traj_no", "trajectory_id", "same_prev").filter(~pl.col("same_prev"))
    known = trajectories.select(
        "trajectory_id",
        *(
            pl.col(c) if c in trajectories.columns else pl.lit(None, t).alias(c)
            for c, t in OPTIONAL_COLUMNS.items()
        ),
    )
    info = firsts.join(
        known.with_columns(_keep=pl.lit(True)), on="trajectory_id", how="left", maintain_order="left"
    )
    info = pl.concat(
        [pl.DataFrame({"_keep": [False]}), info.select("_keep", *OPTIONAL_COLUMNS)], how="diagonal_relaxed"
    ).rechunk()  # traj_no counts from 1: row 0 is padding (one chunk: a gather over two costs 2.5x)
    at = features["traj_no"]
    out = features.with_columns(**{c: info[c].cast(t).gather(at) for c, t in OPTIONAL_COLUMNS.items()})
    keep = info["_keep"].fill_null(False)
    return out if keep[1:].all() else out.filter(keep.gather(at))


def as_features(steps: pl.LazyFrame | pl.DataFrame) -> pl.LazyFrame:
    """Detectors accept raw steps or already-derived features (the miner derives them once)."""
    names = steps.collect_schema().names() if isinstance(steps, pl.LazyFrame) else steps.columns
    return steps.lazy() if "traj_no" in names else step_features(steps).lazy()
