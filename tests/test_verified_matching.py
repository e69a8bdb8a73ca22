"""The verified-answer matcher (bot.verified.matching): a paraphrase is given the answer, a near
miss never — by hand-made candidates, and on the labelled set with the real bundled model."""

from __future__ import annotations

import pytest

from bot.verified.matching import Candidate, best_match, judge, key_terms
from tests.support.verified_set import by_offer, by_rule, candidate_lists, load_set, score

LISBON_WIFI = "What's the guest wifi password in the Lisbon office?"


def given(question: str, variant: str, similarity: float, synonyms: dict[str, list[str]] | None = None) -> bool:
    return judge(question, Candidate(1, variant, similarity), synonyms or {}).given


def test_another_office_is_a_near_miss_however_close():
    verdict = judge("What's the guest wifi password in the Portland office?", Candidate(1, LISBON_WIFI, 0.85))
    assert not verdict.given and "portland" in verdict.reason
    assert not given("guest wifi password shanghai office", LISBON_WIFI, 0.95)


def test_a_paraphrase_with_the_same_key_terms_is_given():
    assert given("how do I get on the guest wifi in Lisbon?", LISBON_WIFI, 0.83)
    assert given("lisbon guest wifi pw", LISBON_WIFI, 0.78)  # "pw" is "password" written short
    assert given("cost center code platform team?", "What is the cost centre code for the Platform team?", 0.86)
    printer = "How do I connect to the printer on the 2nd floor in Portland?"
    assert given("portland 2nd floor printer setup", printer, 0.81)  # reworded: "setup" elsewhere than "connect"
    assert not given("portland 2nd floor printer setup", printer, 0.70)  # a rewording must be closer
    assert not given("lisbon guest wifi pw", LISBON_WIFI, 0.45)  # the words alone are not enough


def test_a_question_adding_words_is_given_but_not_one_swapping_a_word():
    assert given("guest wifi password in the Lisbon office on weekends", LISBON_WIFI, 0.8)
    assert not given("what's the staff wifi password in the lisbon office?", LISBON_WIFI, 0.9)


def test_ordinals_and_numbers_are_one_and_must_agree():
    assert {w.term for w in key_terms("3rd")} == {w.term for w in key_terms("third")} == {w.term for w in key_terms("3")}
    assert given("how can i reserve one of the zoom rooms", "How can I reserve a Zoom Room?", 0.8)  # "one" is no number
    variant = "Where is the first aid kit on the 4th floor of the Portland office?"
    assert given("where's the first aid kit on floor four in portland", variant, 0.88)
    verdict = judge("Where is the first aid kit on the third floor of the Portland office?", Candidate(1, variant, 0.99))
    assert not verdict.given and "numbers differ" in verdict.reason
    assert not given("What's the door code for the bike room in Building 3?",
                     "What's the door code for the bike room in Building 2?", 0.96)


def test_acronyms_are_key_terms():
    variant = "What is the VAT number of Acme's Portuguese company?"
    assert not given("What is the DUNS number of Acme's Portuguese company?", variant, 0.84)
    assert not given("Who is the IT manager in Lisbon?", "Who is the office manager in Lisbon?", 0.85)  # not "it"


def test_an_owner_may_be_left_out_a_place_may_not():
    assert given("whats our duns number", "What is Acme Widgets' DUNS number?", 0.7)
    assert given("whats our duns number for the bank form", "What is Acme Widgets' DUNS number?", 0.7)
    assert not given("what's the guest wifi password?", LISBON_WIFI, 0.8)  # which office's? not said
    assert not given("can i bring my dog to the office on fridays", "Can I bring my dog to the Lisbon office?", 0.65)


def test_one_thing_of_two_words_swapped_is_a_near_miss():
    variant = "What's the closest metro station to the Lisbon office?"
    assert not given("What's the closest bus stop to the Lisbon office?", variant, 0.84)


def test_synonyms_from_the_sources_file_agree_either_way():
    synonyms = {"vacation": ["annual leave"], "PTO": ["annual leave"]}
    variant = "Can I buy extra annual leave days?"
    assert not given("can i buy extra vacation days", variant, 0.8)  # without them: "vacation" for "annual leave"
    assert given("can i buy extra vacation days", variant, 0.8, synonyms)
    assert given("can i buy extra PTO days", variant, 0.8, synonyms)
    assert given("Can I buy extra annual leave days?", "can I buy extra vacation days?", 0.8, synonyms)


def test_chinese_is_compared_by_character():
    lunch = "上海办公室有午餐补贴吗？"
    assert not given("上海办公室有晚餐补贴吗？", lunch, 1.0)  # dinner, not lunch: the model sees no difference
    assert not given("上海办公室可以停自行车吗？", "上海办公室可以停车吗？", 0.97)  # a bicycle added
    assert given("上海办公室怎么连打印机", "上海办公室的打印机怎么连接？", 0.95)


def test_chinese_may_add_around_the_variants_words_not_inside_them():
    parking = "上海办公室可以停车吗？"
    assert given("上海办公室有停车位吗", parking, 0.95)  # 停车 whole, 位 after it: a parking space
    assert not given("上海办公室可以停自行车吗？", parking, 0.97)  # 自行 inside 停车: a bicycle
    assert not given("里斯本办公室有停车位吗", parking, 0.95)  # another office
    assert not given("上海办公室停车费多少", "上海办公室停车位多少", 0.95)  # a fee, not a space: 费 in place of 位


def test_chinese_question_phrases_are_set_aside():
    assert [w.term for w in key_terms("上海办公室什么时候开门")] == [w.term for w in key_terms("上海办公室几点开门")]
    assert given("上海办公室年会日期", "上海办公室的年会是哪天？", 0.92)  # "its date" for "which day"
    assert given("今年上海办公室年会什么时候", "上海办公室的年会是哪天？", 0.89)
    assert not given("上海办公室团建是哪天", "上海办公室的年会是哪天？", 0.95)  # a team outing, not the annual party


def test_the_organisation_as_the_subject_may_be_left_out():
    eye_tests = "Does Acme pay for eye tests in Lisbon?"
    assert given("are eye exams covered in lisbon", eye_tests, 0.77)
    assert given("can lisbon employees get an eye test paid for", eye_tests, 0.84)
    assert not given("are eye exams covered", eye_tests, 0.8)  # which office's? not said
    assert not given("Does Globex pay for eye tests in Lisbon?", eye_tests, 0.9)  # another company named
    assert not given("is the office open on weekends", "Is Lisbon office open on weekends?", 0.8)  # a place after "is"


def test_a_variant_without_words_to_agree_on_is_never_given():
    assert not given("how do I get on the guest wifi in Lisbon?", "What is it?", 0.9)
    assert not given("anything", "", 0.9)


def test_best_match_gives_the_closest_agreeing_candidate_or_none():
    candidates = [
        Candidate(7, "What's the guest wifi password in the Portland office?", 0.90),
        Candidate(3, LISBON_WIFI, 0.84),
        Candidate(5, "Where can I park my car at the Lisbon office?", 0.47),
    ]
    match = best_match("what's the guest wifi password in the lisbon office", candidates)
    assert match is not None and (match.answer_id, match.variant) == (3, LISBON_WIFI)
    assert best_match("what's the guest wifi password in the shanghai office", candidates) is None
    assert best_match("anything", []) is None


@pytest.mark.slow
def test_the_labelled_set_with_the_bundled_model():
    """The set's targets (docs/tuning.md, "Verified answers: the matcher"), embedded and ranked as
    `bot.verified.lookup` does. The issue's paraphrase target (0.85 given) is not reached: the
    floors asserted are what the rule measures, given and given-or-offered, so a change that loses
    paraphrases fails here too. One held-out-3 paraphrase is given another answer ("lisbon office
    bicycle parking?" the car park's: "bicycle" for "car" in another order reads as a rewording),
    measured, not wanted."""
    from bot.settings import SAMPLE_SOURCES
    from sources import load_synonyms

    labelled = load_set()
    candidates = candidate_lists(labelled)
    synonyms = load_synonyms(SAMPLE_SOURCES)
    rule, reached = by_rule(candidates, synonyms), by_offer(candidates, synonyms)
    # given: 33/46, 32/45, 33/42, 38/60; given or offered: 41/46, 41/45, 41/42, 52/60
    measured = (("dev", 0.71, 0.89, 0), ("held-out", 0.71, 0.91, 0), ("held-out-2", 0.78, 0.97, 0),
                ("held-out-3", 0.63, 0.86, 1))
    for split, floor, reach_floor, others in measured:
        asked = [a for a in labelled.asked if a.split == split]
        result = score(asked, rule)
        assert result.near_misses <= 0.05, (split, result.counts)
        assert result.samples == 0, (split, result.counts)
        assert result.paraphrases >= floor, (split, result.counts)
        assert result.others <= others, (split, result.counts, result.others)
        assert score(asked, reached).paraphrases >= reach_floor, (split, score(asked, reached).counts)


def test_an_identifier_is_the_same_written_together_or_apart():
    assert given("where can i find my w2", "Where do I download my W-2?", 0.82)
    assert given("iso27001 certificate?", "Where is our ISO 27001 certificate?", 0.74)
    assert not given("where can i find my w4", "Where do I download my W-2?", 0.82)
    assert not given("iso27002 certificate?", "Where is our ISO 27001 certificate?", 0.74)
    assert {w.term for w in key_terms("4th")} == {"4"}  # an ordinal stays one number


def test_chinese_numerals_are_numbers():
    overtime = "加班到晚上九点以后可以报销晚餐吗？"
    assert given("晚上加班到9点后晚餐报销", overtime, 0.89)
    assert not given("加班到晚上十点以后可以报销晚餐吗", overtime, 0.97)  # ten o'clock, not nine
    assert not given("三楼的会议室怎么预订", "四楼的会议室怎么预订？", 0.99)  # the third floor, not the fourth
    assert [w.term for w in key_terms("第三层")] == ["3", "层"] and [w.term for w in key_terms("一点点")] == ["一", "点", "点"]


def test_an_acronym_written_out_agrees_whatever_the_similarity():
    assert given("who's our data protection officer", "Who is the DPO?", 0.37)  # the model reads "DPO" as nothing
    assert given("who is the DPO", "Who is our data protection officer?", 0.45)
    assert not given("who's our data protection team", "Who is the DPO?", 0.6)


def test_a_word_wordnet_calls_a_synonym_is_no_swap():
    packages = "Can I get packages delivered to the Portland office?"
    assert given("can i get parcels delivered to the portland office", packages, 0.85)
    assert not given("can i get letters delivered to the portland office", packages, 0.85)
    assert given("misplaced my office badge, who do I contact?", "I lost my office badge, who do I contact?", 0.8)
    assert not given("is breakfast provided in the lisbon office?", "Is lunch provided in the Lisbon office?", 0.9)
    assert not given("can i get parcels delivered to the lisbon office", packages, 0.85)  # names still decide


def test_numbers_are_compared_as_values_however_written():
    orders = "Who approves purchase orders over $10,000?"
    assert given("approver for purchase orders over ten thousand dollars?", orders, 0.84)
    assert given("who approves purchase orders above 10k", orders, 0.8)
    assert not given("who approves purchase orders over $25,000", orders, 0.9)
    rooftop = "Can I use the rooftop terrace at the Lisbon office after 6pm?"
    assert given("can i use the lisbon office rooftop terrace after 18:00", rooftop, 0.85)
    assert not given("can i use the lisbon office rooftop terrace after 19:00", rooftop, 0.85)
    assert [w.term for w in key_terms("our 401k plan")] == ["401", "k", "plan"]  # a plan's name, not 401,000


def test_a_question_undoing_what_the_variant_asks_for_is_a_near_miss():
    """"get" is a request word, set aside, so "give back my licence" would otherwise read as "my
    licence" with words added; an action that undoes or ends what a request obtains never agrees."""
    figma = "How do I get a Figma licence?"
    assert given("figma licence request", figma, 0.81)
    assert not given("how do i give back my figma licence, i dont use it anymore", figma, 0.8)
    assert not given("how do i deactivate the figma licence of someone who left", figma, 0.8)
    assert not given("How do I return a standing desk?", "How do I request a standing desk?", 0.9)
    assert not given("How do I request a standing desk?", "How do I return a standing desk?", 0.9)  # either side


def test_two_short_words_are_two_things_but_a_plural_is_one():
    ups = "What's our UPS account number for shipping from the Portland office?"
    assert not given("what's the USPS account number for shipping from the portland office", ups, 0.9)
    assert given("who's allowed to sign ndas for acme", "Who can sign an NDA for Acme?", 0.79)
    assert given("lisbon guest wifi pw", LISBON_WIFI, 0.78)  # "pw": a long word written short
